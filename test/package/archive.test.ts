import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  appendFileSync,
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, type Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, before, describe, test } from "node:test";
import {
  ARCHIVE_FORMATS,
  type ArchiveFormat,
  parseArchiveFormats,
  readArchive,
  writeArchive,
} from "../../src/package/archive.ts";
import { verifyPackage } from "../../src/package/verify.ts";
import { zstdBackend, zstdCompressStream, zstdDecompressStream } from "../../src/package/zstd.ts";
import { skipBecause } from "../support/skip.ts";
import { copyTreeWithLinks, entryShapes, fakePackage, noise, snapshot, writeExec } from "./fixtures.ts";

const has = (cmd: string, args: string[] = ["--version"]) => {
  const r = spawnSync(cmd, args, { stdio: "ignore" });
  return !r.error;
};
const hasTar = has("tar");
const hasUnzip = has("unzip", ["-v"]);
const hasZstd = has("zstd");

const sha = (f: string) => createHash("sha256").update(readFileSync(f)).digest("hex");

describe("package archives", () => {
  let root = "";
  let pkg = "";
  const archive = (f: ArchiveFormat, name = "a") => path.join(root, "out", `${name}.${f}`);
  before(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), "relay-archive-"));
    pkg = path.join(root, "pkg");
    await fakePackage(pkg);
    for (const f of ARCHIVE_FORMATS) {
      const r = await writeArchive(pkg, archive(f), f);
      assert.ok("ok" in r, JSON.stringify(r));
    }
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("format list parsing", () => {
    assert.deepEqual(parseArchiveFormats("tar.gz, zip,tgz"), { ok: ["tar.gz", "zip"] });
    const bad = parseArchiveFormats("tar.gz,rar");
    assert.ok("error" in bad && /unknown archive format 'rar'/.test(bad.error.message));
  });

  for (const f of ARCHIVE_FORMATS) {
    test(`${f}: entries equal the directory (bytes, modes), sorted, fixed mtime, no top-level folder`, async () => {
      const entries = await readArchive(archive(f));
      assert.ok("ok" in entries, JSON.stringify(entries));
      const want = snapshot(pkg).map((e) => ({ ...e, mode: e.type === "dir" || e.mode & 0o100 ? 0o755 : 0o644 }));
      assert.deepEqual(entryShapes(entries.ok), want);
      const paths = entries.ok.map((e) => e.path);
      assert.deepEqual(paths, [...paths].sort());
      assert.ok(
        entries.ok.every((e) => e.mtime === 315532800),
        "fixed 1980-01-01 mtime",
      );
      // tar keeps the hard link (one stored copy); zip stores the bytes under both names.
      const host = entries.ok.find((e) => e.path === "bin/relay-code-mode-host");
      assert.equal(host?.linkTo, f === "zip" ? undefined : "bin/relay");
      const v = await verifyPackage(archive(f));
      assert.ok("ok" in v);
      assert.deepEqual(v.ok.problems, []);
    });
  }

  // One test per format and tool, each skipped with its reason where the tool is missing.
  const systemTools: Array<{
    f: ArchiveFormat;
    tool: string;
    present: boolean;
    extract: (out: string) => string[];
    check?: string[];
  }> = [
    { f: "tar.gz", tool: "tar", present: hasTar, extract: (out) => ["tar", "-xzf", archive("tar.gz"), "-C", out] },
    {
      f: "tar.zst",
      tool: "zstd and tar",
      present: hasZstd && hasTar,
      extract: (out) => ["sh", "-c", `zstd -dc '${archive("tar.zst")}' | tar -xf - -C '${out}'`],
      check: ["zstd", "-tq"],
    },
    {
      f: "zip",
      tool: "unzip",
      present: hasUnzip,
      extract: (out) => ["unzip", "-q", archive("zip"), "-d", out],
      check: ["unzip", "-tq"],
    },
  ];
  for (const t of systemTools) {
    test(`${t.tool} extracts the ${t.f} archive to the same bytes and modes`, {
      skip: skipBecause(`${t.f} by ${t.tool}`, !t.present && `${t.tool} is not installed`),
    }, () => {
      const out = path.join(root, `sys-${t.f}`);
      mkdirSync(out);
      const argv = t.extract(out);
      const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
      assert.equal(r.status, 0, `${argv.join(" ")}: ${r.stderr}`);
      assert.deepEqual(snapshot(out), snapshot(pkg), `${t.f} extracted by ${t.tool}`);
      if (t.check)
        assert.equal(
          spawnSync(t.check[0]!, [...t.check.slice(1), archive(t.f)]).status,
          0,
          `${t.check.join(" ")} accepts it`,
        );
    });
  }

  test("reproducible: archives of the same content are byte-identical, whatever the files' mtimes", async () => {
    const copy = path.join(root, "copy");
    copyTreeWithLinks(pkg, copy);
    const old = new Date("2001-02-03T04:05:06Z");
    for (const e of snapshot(copy)) utimesSync(path.join(copy, e.path), old, old);
    for (const f of ARCHIVE_FORMATS) {
      const again = await writeArchive(pkg, archive(f, "again"), f);
      const fromCopy = await writeArchive(copy, archive(f, "copy"), f);
      assert.ok("ok" in again && "ok" in fromCopy);
      assert.equal(sha(archive(f, "again")), sha(archive(f)), `${f} rebuilt`);
      assert.equal(sha(archive(f, "copy")), sha(archive(f)), `${f} from a copy with other mtimes`);
    }
  });

  test("a copy whose hard link was split still archives to the same content (tar stores both copies)", async () => {
    const split = path.join(root, "split");
    cpSync(pkg, split, { recursive: true });
    const a = await writeArchive(split, archive("tar.gz", "split"), "tar.gz");
    assert.ok("ok" in a);
    const entries = await readArchive(archive("tar.gz", "split"));
    assert.ok("ok" in entries);
    assert.equal(entries.ok.find((e) => e.path === "bin/relay-code-mode-host")?.linkTo, undefined);
    const v = await verifyPackage(archive("tar.gz", "split"));
    assert.ok("ok" in v);
    assert.deepEqual(v.ok.problems, []);
  });

  test("zstd: the wasm and native backends read each other's output", {
    skip: zstdBackend() !== "native" && "no native zstd in this runtime (the wasm path is the only one)",
  }, async () => {
    // Compresses ~60x, so the wasm decoder's first output-size guess is too small (it retries).
    const data = Buffer.concat([noise(64 << 10, 7), Buffer.from("relay ".repeat(1_000_000))]);
    const run = async (t: Transform, input: Buffer) => {
      const chunks: Buffer[] = [];
      await pipeline(Readable.from([input]), t, new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c), cb()) }));
      return Buffer.concat(chunks);
    };
    const viaWasm = await run(zstdCompressStream(6, "wasm"), data);
    const viaNative = await run(zstdCompressStream(6, "native"), data);
    assert.ok(viaWasm.length < data.length && viaNative.length < data.length);
    assert.deepEqual(await run(zstdDecompressStream("native"), viaWasm), data);
    assert.deepEqual(await run(zstdDecompressStream("wasm"), viaNative), data);
  });

  test("an archive inside the package directory is refused", async () => {
    const r = await writeArchive(pkg, path.join(pkg, "self.tar.gz"), "tar.gz");
    assert.ok("error" in r && r.error.code === "bad_archive_path");
  });

  test("verify lists missing, extra, changed and resized files and mode changes", async () => {
    const bad = path.join(root, "tampered");
    cpSync(pkg, bad, { recursive: true });
    appendFileSync(path.join(bad, "bin/relay"), "x"); // resized
    chmodSync(path.join(bad, "bin/relay"), 0o755); // (Deno's appendFileSync resets the mode)
    const rg = path.join(bad, "relay-path/rg");
    const bytes = readFileSync(rg);
    bytes[100] = bytes[100]! ^ 0xff; // same size, other bytes
    writeFileSync(rg, bytes);
    rmSync(path.join(bad, "relay-path/README.txt")); // missing
    writeExec(path.join(bad, "bin/extra"), "extra"); // extra
    chmodSync(path.join(bad, "bin/relay-code-mode-host"), 0o644); // lost its exec bit
    const v = await verifyPackage(bad);
    assert.ok("ok" in v);
    const p = v.ok.problems.join("\n");
    assert.match(p, /size mismatch: bin\/relay is \d+ bytes/);
    assert.match(p, /sha256 mismatch: relay-path\/rg/);
    assert.match(p, /missing: relay-path\/README.txt/);
    assert.match(p, /extra file: bin\/extra/);
    assert.match(p, /mode mismatch: bin\/relay-code-mode-host is not executable/);
    assert.equal(v.ok.problems.length, 5, p);
    for (const f of ARCHIVE_FORMATS) {
      const a = archive(f, "tampered");
      assert.ok("ok" in (await writeArchive(bad, a, f)));
      const va = await verifyPackage(a);
      assert.ok("ok" in va);
      assert.equal(va.ok.problems.length, 5, `${f}: ${va.ok.problems.join("\n")}`);
    }
    // No manifest at all.
    rmSync(path.join(bad, "relay-package.json"));
    const none = await verifyPackage(bad);
    assert.ok("ok" in none && /relay-package.json/.test(none.ok.problems.join("")));
    // A corrupt archive is a problem, not a crash.
    const corrupt = path.join(root, "out", "corrupt.tar.gz");
    const whole = readFileSync(archive("tar.gz"));
    writeFileSync(corrupt, whole.subarray(0, whole.length >> 1));
    const vc = await verifyPackage(corrupt);
    assert.ok("ok" in vc && vc.ok.problems.length > 0, JSON.stringify(vc));
    assert.equal(statSync(corrupt).size, whole.length >> 1);
  });
});
