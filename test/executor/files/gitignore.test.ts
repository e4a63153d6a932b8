import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { grepFilesTool } from "../../../src/executor/files/grep-files.ts";
import { listDirTool } from "../../../src/executor/files/list-dir.ts";
import { makeCtx, okText, run, withTmp, write } from "./support.ts";

/**
 * A repository whose root .gitignore ignores logs (but keep.log) and build/, and whose sub/
 * .gitignore ignores secret.txt and /only-here.txt and re-includes important.log.
 */
function repo(dir: string): void {
  fs.mkdirSync(path.join(dir, ".git"));
  write(path.join(dir, ".gitignore"), "# logs\n*.log\n!keep.log\nbuild/\n");
  write(path.join(dir, "sub", ".gitignore"), "secret.txt\n/only-here.txt\n!important.log\n");
  for (const f of [
    "a.ts",
    "NOTES.LOG",
    "debug.log",
    "keep.log",
    "build/x.ts",
    "build/y.log",
    "sub/b.ts",
    "sub/debug.log",
    "sub/keep.log",
    "sub/important.log",
    "sub/secret.txt",
    "sub/deep/secret.txt",
    "sub/only-here.txt",
    "sub/deep/only-here.txt",
  ]) {
    write(path.join(dir, f), "needle\n");
  }
}

/** The files grep_files finds for "needle", relative to `dir` and sorted. */
async function found(dir: string, args: Record<string, unknown> = {}, cwd = dir): Promise<string[]> {
  const out = okText(await run(grepFilesTool, { pattern: "needle", ...args }, makeCtx(cwd)));
  if (out.startsWith("No files under")) return [];
  return out
    .split("\n")
    .map((f) => path.relative(dir, f))
    .sort();
}

describe(".gitignore in grep_files and list_dir", () => {
  test("grep honours the root and nested .gitignore files, their negations and anchors", async () => {
    await withTmp(async (dir) => {
      repo(dir);
      // Rules match case-sensitively, as in git on Linux and in ripgrep: *.log leaves NOTES.LOG.
      assert.deepEqual(await found(dir), [
        "NOTES.LOG",
        "a.ts",
        "keep.log",
        "sub/b.ts",
        "sub/deep/only-here.txt",
        "sub/important.log",
        "sub/keep.log",
      ]);
    });
  });

  test("list_dir leaves out what .gitignore ignores", async () => {
    await withTmp(async (dir) => {
      repo(dir);
      const out = okText(await run(listDirTool, { dir_path: ".", depth: 3 }, makeCtx(dir)));
      const shown = [
        ".git/",
        ".gitignore",
        "NOTES.LOG",
        "a.ts",
        "keep.log",
        "sub/",
        "  .gitignore",
        "  b.ts",
        "  deep/",
        "    only-here.txt",
        "  important.log",
        "  keep.log",
      ];
      assert.equal(out, [`Absolute path: ${dir}`, ...shown].join("\n"));
    });
  });

  test("a search that starts below the repository's top still obeys the .gitignore files above it", async () => {
    await withTmp(async (dir) => {
      repo(dir);
      assert.deepEqual(await found(dir, {}, path.join(dir, "sub")), [
        "sub/b.ts",
        "sub/deep/only-here.txt",
        "sub/important.log",
        "sub/keep.log",
      ]);
      assert.deepEqual(await found(dir, { path: "deep" }, path.join(dir, "sub")), ["sub/deep/only-here.txt"]);
    });
  });

  test("an ignored file or directory named explicitly is searched and listed, as ripgrep does", async () => {
    await withTmp(async (dir) => {
      repo(dir);
      // What is below it is still judged by its own path: build/y.log is a log.
      assert.deepEqual(await found(dir, { path: "build" }), ["build/x.ts"]);
      assert.deepEqual(await found(dir, { path: "debug.log" }), ["debug.log"]);
      assert.deepEqual(await found(dir, { path: "sub/secret.txt" }), ["sub/secret.txt"]);
      const listed = okText(await run(listDirTool, { dir_path: "build" }, makeCtx(dir)));
      assert.equal(listed, `Absolute path: ${path.join(dir, "build")}\nx.ts`);
    });
  });

  test("an ignored directory with glob characters in its name can still be named", async () => {
    await withTmp(async (dir) => {
      fs.mkdirSync(path.join(dir, ".git"));
      write(path.join(dir, ".gitignore"), "gen*/\n");
      write(path.join(dir, "gen[1] x", "a.ts"), "needle");
      write(path.join(dir, "gen[1] x", "inner", "b.ts"), "needle");
      assert.deepEqual(await found(dir), []);
      // The directory's name goes into a negation rule: `[1]` and the space must be escaped there.
      assert.deepEqual(await found(dir, { path: "gen[1] x" }), ["gen[1] x/a.ts", "gen[1] x/inner/b.ts"]);
    });
  });

  test("a nested .gitignore re-includes a directory the root one ignores", async () => {
    await withTmp(async (dir) => {
      fs.mkdirSync(path.join(dir, ".git"));
      write(path.join(dir, ".gitignore"), "sub/gen/\n");
      write(path.join(dir, "sub", ".gitignore"), "!gen/\n");
      write(path.join(dir, "sub", "gen", "g.ts"), "needle");
      assert.deepEqual(await found(dir), ["sub/gen/g.ts"]);
    });
  });

  test("include narrows the search but does not bring back ignored files", async () => {
    await withTmp(async (dir) => {
      repo(dir);
      assert.deepEqual(await found(dir, { include: "*.log" }), ["keep.log", "sub/important.log", "sub/keep.log"]);
    });
  });

  test("outside a git repository .gitignore files are not read; inside a nested one, its own are", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, ".gitignore"), "*.log\n");
      write(path.join(dir, "a.log"), "needle");
      write(path.join(dir, "inner", ".git"), "gitdir: /elsewhere\n"); // a worktree's .git is a file
      write(path.join(dir, "inner", ".gitignore"), "*.tmp\n");
      write(path.join(dir, "inner", "b.tmp"), "needle");
      write(path.join(dir, "inner", "c.log"), "needle");
      assert.deepEqual(await found(dir), ["a.log", "inner/c.log"]);
      // Once the outer directory is a repository too, its rules stop at the nested one's top.
      fs.mkdirSync(path.join(dir, ".git"));
      assert.deepEqual(await found(dir), ["inner/c.log"]);
      assert.deepEqual(await found(dir, { path: "inner" }), ["inner/c.log"]);
    });
  });
});
