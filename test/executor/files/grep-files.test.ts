import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import {
  compileGlob,
  createGrepFilesTool,
  grepFilesTool,
  MAX_SCANNED_FILES,
} from "../../../src/executor/files/grep-files.ts";
import { errOf, makeCtx, okText, run, withTmp, write } from "./support.ts";

/** Writes a file and sets its modification time to `age` seconds in the past. */
function aged(file: string, content: string | Uint8Array, age: number): string {
  write(file, content);
  const t = new Date(Date.now() - age * 1000);
  fs.utimesSync(file, t, t);
  return file;
}

describe("grep_files", () => {
  test("returns matching files newest first, one absolute path per line", async () => {
    await withTmp(async (dir) => {
      const old = aged(path.join(dir, "old.ts"), "const needle = 1;\n", 300);
      const mid = aged(path.join(dir, "sub", "mid.md"), "a needle here\n", 200);
      const fresh = aged(path.join(dir, "sub", "deep", "fresh.txt"), "x\nneedle\n", 100);
      aged(path.join(dir, "none.ts"), "haystack only\n", 50);
      const out = okText(await run(grepFilesTool, { pattern: "needle" }, makeCtx(dir)));
      assert.equal(out, [fresh, mid, old].join("\n"));
    });
  });

  test("skips .git, node_modules and binary files", async () => {
    await withTmp(async (dir) => {
      const keep = write(path.join(dir, "keep.txt"), "needle");
      write(path.join(dir, ".git", "config"), "needle");
      write(path.join(dir, "node_modules", "pkg", "index.js"), "needle");
      write(path.join(dir, "sub", "node_modules", "x.js"), "needle");
      write(path.join(dir, "bin.dat"), new Uint8Array([110, 101, 101, 100, 108, 101, 0, 1]));
      assert.equal(okText(await run(grepFilesTool, { pattern: "needle" }, makeCtx(dir))), keep);
    });
  });

  test("include filters by file name or by path relative to the search root", async () => {
    await withTmp(async (dir) => {
      const a = aged(path.join(dir, "src", "a.ts"), "hit", 30);
      const b = aged(path.join(dir, "src", "deep", "b.ts"), "hit", 20);
      const c = aged(path.join(dir, "lib", "c.ts"), "hit", 10);
      aged(path.join(dir, "src", "d.js"), "hit", 5);
      const ctx = makeCtx(dir);
      assert.equal(okText(await run(grepFilesTool, { pattern: "hit", include: "*.ts" }, ctx)), [c, b, a].join("\n"));
      assert.equal(
        okText(await run(grepFilesTool, { pattern: "hit", include: "src/**/*.ts" }, ctx)),
        [b, a].join("\n"),
      );
      assert.equal(
        okText(await run(grepFilesTool, { pattern: "hit", include: "*.{js,ts}", path: "src" }, ctx)).split("\n").length,
        3,
      );
    });
  });

  test("include globs through the tool: name, path, braces and a leading ./", async () => {
    await withTmp(async (dir) => {
      const top = aged(path.join(dir, "top.ts"), "hit", 50);
      const a = aged(path.join(dir, "src", "a.ts"), "hit", 40);
      const b = aged(path.join(dir, "src", "x", "y", "b.ts"), "hit", 30);
      const m = aged(path.join(dir, "src", "m.mjs"), "hit", 20);
      aged(path.join(dir, "src", "a.tsx"), "hit", 10);
      aged(path.join(dir, "lib", "src", "c.ts"), "hit", 5);
      const ctx = makeCtx(dir);
      const found = async (include: string) =>
        okText(await run(grepFilesTool, { pattern: "hit", include }, ctx)).split("\n");
      assert.deepEqual(await found("src/**/*.ts"), [b, a]);
      assert.deepEqual(await found("./src/**/*.ts"), [b, a]);
      assert.deepEqual(await found("src/*.{ts,mjs}"), [m, a]);
      assert.deepEqual((await found("*.ts")).length, 4);
      assert.ok((await found("*.ts")).includes(top));
      assert.match((await found("*.nothing"))[0] as string, /^No files under/);
    });
  });

  test("an unusable include glob is invalid_arguments saying what is wrong", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "a.ts"), "hit");
      const ctx = makeCtx(dir);
      const brace = errOf(await run(grepFilesTool, { pattern: "hit", include: "*.{ts,js" }, ctx), "invalid_arguments");
      assert.equal(
        brace.message,
        'include "*.{ts,js" is not a usable glob: a "{" is never closed. Balance the brackets and braces, or put a backslash before one to match it literally.',
      );
      const bracket = errOf(
        await run(grepFilesTool, { pattern: "hit", include: "src/[ab.ts" }, ctx),
        "invalid_arguments",
      );
      assert.match(bracket.message, /a "\[" is never closed/);
      const range = errOf(await run(grepFilesTool, { pattern: "hit", include: "[z-a].ts" }, ctx), "invalid_arguments");
      assert.match(
        range.message,
        /^include "\[z-a\]\.ts" is not a usable glob: Invalid regular expression: range out of order in character class\.$/i,
      );
    });
  });

  test("path narrows the search and limit caps the output with a note", async () => {
    await withTmp(async (dir) => {
      for (let i = 0; i < 5; i++) aged(path.join(dir, "many", `f${i}.txt`), "match", 100 - i);
      write(path.join(dir, "outside.txt"), "match");
      const out = okText(await run(grepFilesTool, { pattern: "match", path: "many", limit: 2 }, makeCtx(dir))).split(
        "\n",
      );
      assert.deepEqual(out.slice(0, 2), [path.join(dir, "many", "f4.txt"), path.join(dir, "many", "f3.txt")]);
      assert.match(out[2] as string, /^\[3 more matching files not shown/);
      assert.equal(out.length, 3);
    });
  });

  test("JavaScript regex syntax, (?i), and a clear message when nothing matches", async () => {
    await withTmp(async (dir) => {
      const f = write(path.join(dir, "code.ts"), "export function  main() {}\n");
      const ctx = makeCtx(dir);
      assert.equal(okText(await run(grepFilesTool, { pattern: "function\\s+main\\(" }, ctx)), f);
      assert.equal(okText(await run(grepFilesTool, { pattern: "^export" }, ctx)), f);
      assert.equal(okText(await run(grepFilesTool, { pattern: "(?i)EXPORT FUNCTION" }, ctx)), f);
      assert.match(okText(await run(grepFilesTool, { pattern: "EXPORT" }, ctx)), /^No files under .* matched/);
    });
  });

  test("an invalid regular expression is invalid_arguments", async () => {
    await withTmp(async (dir) => {
      const e = errOf(await run(grepFilesTool, { pattern: "foo(bar" }, makeCtx(dir)), "invalid_arguments");
      assert.match(e.message, /not a valid JavaScript regular expression/);
      assert.ok(e.message.includes("foo(bar"));
    });
  });

  test("a missing path is not_found", async () => {
    await withTmp(async (dir) => {
      const e = errOf(await run(grepFilesTool, { pattern: "x", path: "missing" }, makeCtx(dir)), "not_found");
      assert.ok(e.message.includes(path.join(dir, "missing")));
    });
  });

  test("an aborted signal stops the search", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "a.txt"), "needle");
      const ac = new AbortController();
      ac.abort();
      errOf(await run(grepFilesTool, { pattern: "needle" }, makeCtx(dir, undefined, ac.signal)), "aborted");
    });
  });

  test("stops at the file cap and says so", async () => {
    await withTmp(async (dir) => {
      for (let i = 0; i < 60; i++) write(path.join(dir, `d${i % 3}`, `${i}.txt`), i % 10 === 0 ? "needle" : "");
      const tool = createGrepFilesTool({ maxFiles: 25, maxFileBytes: 1024 });
      const r = await run(tool, { pattern: "needle" }, makeCtx(dir));
      assert.match(okText(r), /\[Stopped after walking 25 files; results are incomplete/);
      assert.ok("ok" in r && r.ok.metadata?.visited_files === 25 && r.ok.metadata?.capped === true);
      // The cap bounds the walk itself, not only the files that pass `include`.
      const filtered = await run(tool, { pattern: "needle", include: "*.none" }, makeCtx(dir));
      assert.match(okText(filtered), /Stopped after walking 25 files/);
      const all = await run(
        createGrepFilesTool({ maxFiles: 60, maxFileBytes: 1024 }),
        { pattern: "needle" },
        makeCtx(dir),
      );
      assert.equal(okText(all).split("\n").length, 6);
      assert.equal(MAX_SCANNED_FILES, 20_000);
    });
  });

  test("skips files over the size limit and says how many", async () => {
    await withTmp(async (dir) => {
      const small = write(path.join(dir, "small.txt"), "needle");
      write(path.join(dir, "big.txt"), `needle${"x".repeat(2000)}`);
      const out = okText(
        await run(createGrepFilesTool({ maxFiles: 100, maxFileBytes: 1024 }), { pattern: "needle" }, makeCtx(dir)),
      );
      assert.equal(out, `${small}\n[Skipped 1 files larger than 1024 bytes.]`);
    });
  });
});

describe("compileGlob", () => {
  test("name globs match the base name; path globs the relative path", () => {
    const ts = compileGlob("*.ts");
    assert.equal(ts.test("a.ts"), true);
    assert.equal(ts.test("x/y/a.ts"), true);
    assert.equal(ts.test("a.tsx"), false);
    const deep = compileGlob("src/**/*.ts");
    assert.equal(deep.test("src/a.ts"), true);
    assert.equal(deep.test("src/x/y/a.ts"), true);
    assert.equal(deep.test("lib/src/a.ts"), false);
    assert.equal(deep.test("src/a.js"), false);
    const alt = compileGlob("*.{js,mjs}");
    assert.equal(alt.test("a.mjs"), true);
    assert.equal(alt.test("a.ts"), false);
    assert.equal(compileGlob("file?.[ch]").test("file1.c"), true);
    assert.equal(compileGlob("file?.[!ch]").test("file1.c"), false);
    assert.equal(compileGlob("a+b(1).txt").test("a+b(1).txt"), true);
  });

  test("dot files, ./ prefixes, nested braces and backslash escapes", () => {
    assert.equal(compileGlob("*.ts").test("src/.hidden.ts"), true);
    assert.equal(compileGlob("./src/*.ts").test("src/a.ts"), true);
    assert.equal(compileGlob("src/*.ts").test("src/x/a.ts"), false);
    const nested = compileGlob("{src,test}/**/*.{ts,m{j,t}s}");
    assert.deepEqual(
      ["src/a.ts", "test/x/b.mjs", "test/c.mts", "lib/a.ts", "src/a.cjs"].filter((p) => nested.test(p)),
      ["src/a.ts", "test/x/b.mjs", "test/c.mts"],
    );
    if (path.sep === "/") {
      assert.equal(compileGlob("a\\*b.txt").test("a*b.txt"), true);
      assert.equal(compileGlob("a\\*b.txt").test("axb.txt"), false);
    }
  });

  test("unbalanced brackets and classes that cannot compile throw", () => {
    for (const bad of ["*.{ts,js", "src/[abc.ts", "a]b", "[z-a].ts"]) assert.throws(() => compileGlob(bad), bad);
  });
});
