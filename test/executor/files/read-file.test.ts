import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { describe, test } from "node:test";
import { readFileTool } from "../../../src/executor/files/read-file.ts";
import { errOf, makeCtx, okText, run, withTmp, write } from "./support.ts";

const numbered = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `line ${i + from}`);

describe("read_file", () => {
  test("prefixes lines with L<n>: and honours offset and limit", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "a.txt"), "alpha\n  beta\n\ngamma\n");
      const ctx = makeCtx(dir);
      assert.equal(
        okText(await run(readFileTool, { file_path: "a.txt" }, ctx)),
        "L1: alpha\nL2:   beta\nL3: \nL4: gamma",
      );
      const page = okText(await run(readFileTool, { file_path: path.join(dir, "a.txt"), offset: 2, limit: 2 }, ctx));
      assert.equal(
        page,
        "L2:   beta\nL3: \n[More lines remain after line 3. To continue, call read_file with offset=4.]",
      );
      assert.equal(okText(await run(readFileTool, { file_path: "a.txt", offset: 4, limit: 5 }, ctx)), "L4: gamma");
    });
  });

  test("counts a last line without a newline and strips CR from CRLF lines", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "w.txt"), "one\r\ntwo\r\nthree");
      assert.equal(
        okText(await run(readFileTool, { file_path: "w.txt" }, makeCtx(dir))),
        "L1: one\nL2: two\nL3: three",
      );
      const e = errOf(await run(readFileTool, { file_path: "w.txt", offset: 4 }, makeCtx(dir)), "invalid_arguments");
      assert.match(e.message, /has 3 lines/);
    });
  });

  test("pages through a 2,000-line file", async () => {
    await withTmp(async (dir) => {
      const lines = numbered(2000);
      write(path.join(dir, "big.txt"), `${lines.join("\n")}\n`);
      const ctx = makeCtx(dir);
      const all = okText(await run(readFileTool, { file_path: "big.txt" }, ctx)).split("\n");
      assert.equal(all.length, 2000, "the default limit covers exactly 2000 lines, with no continuation line");
      assert.equal(all[1999], "L2000: line 2000");

      const seen: string[] = [];
      let offset = 1;
      for (let guard = 0; guard < 10; guard++) {
        const r = await run(readFileTool, { file_path: "big.txt", offset, limit: 700 }, ctx);
        const out = okText(r).split("\n");
        const more = out[out.length - 1]?.startsWith("[More lines remain");
        const body = more ? out.slice(0, -1) : out;
        seen.push(...body.map((l) => l.replace(/^L\d+: /, "")));
        if (!more) break;
        const next = /offset=(\d+)/.exec(out[out.length - 1] as string);
        assert.ok(next);
        offset = Number(next[1]);
        assert.ok("ok" in r && r.ok.metadata?.next_offset === offset);
      }
      assert.deepEqual(seen, lines);
      assert.equal(offset, 1401);
    });
  });

  test("a 2,001-line file ends the first page with the next offset", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "f.txt"), `${numbered(2001).join("\n")}\n`);
      const out = okText(await run(readFileTool, { file_path: "f.txt" }, makeCtx(dir))).split("\n");
      assert.equal(out.length, 2001);
      assert.equal(out[2000], "[More lines remain after line 2000. To continue, call read_file with offset=2001.]");
      assert.equal(
        okText(await run(readFileTool, { file_path: "f.txt", offset: 2001 }, makeCtx(dir))),
        "L2001: line 2001",
      );
    });
  });

  test("cuts lines longer than 500 characters", async () => {
    await withTmp(async (dir) => {
      const long = "é".repeat(300) + "x".repeat(5000);
      write(path.join(dir, "long.txt"), `short\n${long}\nafter\n`);
      const out = okText(await run(readFileTool, { file_path: "long.txt" }, makeCtx(dir))).split("\n");
      assert.equal(out.length, 3);
      assert.ok(out[1]?.startsWith(`L2: ${long.slice(0, 500)} [line cut at 500 characters`), out[1]?.slice(0, 80));
      assert.ok(!out[1]?.includes("x".repeat(201)));
      assert.equal(out[2], "L3: after");
      const exact = "y".repeat(500);
      write(path.join(dir, "exact.txt"), `${exact}\r\n`);
      assert.equal(okText(await run(readFileTool, { file_path: "exact.txt" }, makeCtx(dir))), `L1: ${exact}`);
    });
  });

  test("missing file: not_found naming the path", async () => {
    await withTmp(async (dir) => {
      const e = errOf(await run(readFileTool, { file_path: "nope/missing.txt" }, makeCtx(dir)), "not_found");
      assert.ok(e.message.includes(path.join(dir, "nope/missing.txt")), e.message);
    });
  });

  test("directory: is_directory suggesting list_dir", async () => {
    await withTmp(async (dir) => {
      fs.mkdirSync(path.join(dir, "sub"));
      const e = errOf(await run(readFileTool, { file_path: "sub" }, makeCtx(dir)), "is_directory");
      assert.match(e.message, /list_dir/);
    });
  });

  test("binary file: binary_file with its size", async () => {
    await withTmp(async (dir) => {
      const bytes = new Uint8Array(12345).fill(65);
      bytes[8000] = 0;
      write(path.join(dir, "bin.dat"), bytes);
      const e = errOf(await run(readFileTool, { file_path: "bin.dat" }, makeCtx(dir)), "binary_file");
      assert.match(e.message, /12345 bytes/);
      // A NUL byte after the first 8 KiB does not make a file binary.
      const late = new Uint8Array(9000).fill(66);
      late[8500] = 0;
      write(path.join(dir, "late.dat"), late);
      assert.ok("ok" in (await run(readFileTool, { file_path: "late.dat" }, makeCtx(dir))));
    });
  });

  test("offset past the end: invalid_arguments saying how many lines there are", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "s.txt"), "a\nb\nc\n");
      const e = errOf(await run(readFileTool, { file_path: "s.txt", offset: 10 }, makeCtx(dir)), "invalid_arguments");
      assert.match(e.message, /has 3 lines/);
      assert.match(e.message, /offset 10/);
    });
  });

  test("empty file reads as empty; offset 2 of it is past the end", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "e.txt"), "");
      assert.equal(okText(await run(readFileTool, { file_path: "e.txt" }, makeCtx(dir))), "(empty file)");
      const e = errOf(await run(readFileTool, { file_path: "e.txt", offset: 2 }, makeCtx(dir)), "invalid_arguments");
      assert.match(e.message, /has 0 lines/);
    });
  });

  test("schema errors come back as invalid_arguments values", async () => {
    await withTmp(async (dir) => {
      errOf(await run(readFileTool, { file_path: "a", offset: 0 }, makeCtx(dir)), "invalid_arguments");
      errOf(await run(readFileTool, { path: "a" }, makeCtx(dir)), "invalid_arguments");
    });
  });

  test("a cancelled call returns aborted", async () => {
    await withTmp(async (dir) => {
      write(path.join(dir, "a.txt"), "a\n");
      const ac = new AbortController();
      ac.abort();
      errOf(await run(readFileTool, { file_path: "a.txt" }, makeCtx(dir, undefined, ac.signal)), "aborted");
    });
  });

  test("reads the end of a 50 MB file with bounded memory", async () => {
    await withTmp(async (dir) => {
      const file = path.join(dir, "huge.txt");
      const lineCount = 500_000; // 100 bytes per line
      const fd = fs.openSync(file, "w");
      const perChunk = 10_000;
      for (let start = 1; start <= lineCount; start += perChunk) {
        let chunk = "";
        for (let n = start; n < start + perChunk; n++) chunk += `${String(n).padStart(10, "0")} ${"z".repeat(88)}\n`;
        fs.writeSync(fd, chunk);
      }
      fs.closeSync(fd);
      assert.equal(fs.statSync(file).size, 50_000_000);

      // A single 50 MB line must not be accumulated either.
      const oneLine = path.join(dir, "one-line.txt");
      const ofd = fs.openSync(oneLine, "w");
      const block = "q".repeat(1_000_000);
      for (let i = 0; i < 50; i++) fs.writeSync(ofd, block);
      fs.closeSync(ofd);

      const before = process.memoryUsage().rss;
      let peak = before;
      const timer = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 5);
      try {
        const ctx = makeCtx(dir);
        const out = okText(await run(readFileTool, { file_path: "huge.txt", offset: lineCount - 2, limit: 10 }, ctx));
        assert.equal(out.split("\n").length, 3);
        assert.ok(out.startsWith(`L${lineCount - 2}: 0000499998 zzz`), out.slice(0, 40));
        assert.ok(out.endsWith(`L${lineCount}: 0000500000 ${"z".repeat(88)}`));
        const e = errOf(
          await run(readFileTool, { file_path: "huge.txt", offset: lineCount + 1 }, ctx),
          "invalid_arguments",
        );
        assert.match(e.message, /has 500000 lines/);
        const single = okText(await run(readFileTool, { file_path: "one-line.txt" }, ctx));
        assert.equal(single, `L1: ${"q".repeat(500)} [line cut at 500 characters; it is 50000000 bytes long]`);
        peak = Math.max(peak, process.memoryUsage().rss);
      } finally {
        clearInterval(timer);
      }
      const growthMb = (peak - before) / 1e6;
      assert.ok(growthMb < 40, `RSS grew by ${growthMb.toFixed(1)} MB while reading`);
    });
  });
});
