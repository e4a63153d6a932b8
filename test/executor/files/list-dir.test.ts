import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { listDirTool } from "../../../src/executor/files/list-dir.ts";
import { errOf, makeCtx, okText, run, withTmp, write } from "./support.ts";

function tree(dir: string): void {
  write(path.join(dir, "b.txt"), "b");
  write(path.join(dir, "a.txt"), "a");
  write(path.join(dir, "src", "main.ts"), "m");
  write(path.join(dir, "src", "lib", "deep.ts"), "d");
  write(path.join(dir, "src", "lib", "deeper", "x.ts"), "x");
  fs.mkdirSync(path.join(dir, "empty"));
  fs.symlinkSync(path.join(dir, "src"), path.join(dir, "link"));
}

describe("list_dir", () => {
  test("sorted tree, two levels by default, / for directories and @ for symlinks", async () => {
    await withTmp(async (dir) => {
      tree(dir);
      const out = okText(await run(listDirTool, { dir_path: "." }, makeCtx(dir)));
      assert.equal(
        out,
        [`Absolute path: ${dir}`, "a.txt", "b.txt", "empty/", "link@", "src/", "  lib/", "  main.ts"].join("\n"),
      );
    });
  });

  test("depth 1 lists one level and depth 3 descends further", async () => {
    await withTmp(async (dir) => {
      tree(dir);
      const one = okText(await run(listDirTool, { dir_path: dir, depth: 1 }, makeCtx("/")));
      assert.equal(one.split("\n").slice(1).join(","), "a.txt,b.txt,empty/,link@,src/");
      const three = okText(await run(listDirTool, { dir_path: "src", depth: 3 }, makeCtx(dir)));
      assert.equal(
        three,
        [`Absolute path: ${path.join(dir, "src")}`, "lib/", "  deep.ts", "  deeper/", "    x.ts", "main.ts"].join("\n"),
      );
    });
  });

  test("pages with offset and limit, telling the next offset", async () => {
    await withTmp(async (dir) => {
      for (let i = 0; i < 250; i++) write(path.join(dir, `f${String(i).padStart(3, "0")}.txt`), "");
      const ctx = makeCtx(dir);
      const first = okText(await run(listDirTool, { dir_path: "." }, ctx)).split("\n");
      assert.equal(first.length, 1 + 200 + 1);
      assert.equal(first[1], "f000.txt");
      assert.equal(first[200], "f199.txt");
      assert.equal(first[201], "[More entries remain after entry 200. To continue, call list_dir with offset=201.]");
      const second = okText(await run(listDirTool, { dir_path: ".", offset: 201 }, ctx)).split("\n");
      assert.equal(second.length, 1 + 50);
      assert.equal(second[1], "f200.txt");
      assert.equal(second[50], "f249.txt");
      const mid = okText(await run(listDirTool, { dir_path: ".", offset: 10, limit: 3 }, ctx)).split("\n");
      assert.deepEqual(mid.slice(1), [
        "f009.txt",
        "f010.txt",
        "f011.txt",
        "[More entries remain after entry 12. To continue, call list_dir with offset=13.]",
      ]);
    });
  });

  test("offset past the end says how many entries there are", async () => {
    await withTmp(async (dir) => {
      tree(dir);
      const e = errOf(await run(listDirTool, { dir_path: ".", offset: 50 }, makeCtx(dir)), "invalid_arguments");
      assert.match(e.message, /7 entries/);
    });
  });

  test("empty directory", async () => {
    await withTmp(async (dir) => {
      assert.equal(
        okText(await run(listDirTool, { dir_path: dir }, makeCtx(dir))),
        `Absolute path: ${dir}\n(empty directory)`,
      );
    });
  });

  test("missing directory: not_found; a file: not_a_directory suggesting read_file", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "f.txt"), "x");
      const missing = errOf(await run(listDirTool, { dir_path: "nope" }, makeCtx(dir)), "not_found");
      assert.ok(missing.message.includes(path.join(dir, "nope")));
      const file = errOf(await run(listDirTool, { dir_path: "f.txt" }, makeCtx(dir)), "not_a_directory");
      assert.match(file.message, /read_file/);
      errOf(await run(listDirTool, { dir_path: ".", depth: 0 }, makeCtx(dir)), "invalid_arguments");
    });
  });
});
