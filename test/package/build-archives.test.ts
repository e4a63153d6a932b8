/**
 * The host package, built for real, written as each archive format and read back by relay's
 * reader and by the system's tools. Each compresses both real binaries (about 250 MB): 8-22 s
 * apiece on 2 cores, so this is a long suite (.ci/run's long step; RELAY_LONG_TESTS=1 runs it
 * here), and the packaged binary builds it again from the sources, which must give the same
 * bytes. The formats' own tests (archive.test.ts) run on small trees in npm test.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ARCHIVE_FORMATS, type ArchiveFormat, readArchive, writeArchive } from "../../src/package/archive.ts";
import { verifyPackage } from "../../src/package/verify.ts";
import { VERSION } from "../../src/version.ts";
import { longSuite } from "../support/long.ts";
import { type BuildJson, cleanEnv, hasBun, newestSourceMtime, parseBuild, ROOT, relay } from "./build-support.ts";
import { entryShapes, snapshot } from "./fixtures.ts";

const canRun = (cmd: string, args: string[]) => !spawnSync(cmd, args, { stdio: "ignore" }).error;
const HAS = { tar: canRun("tar", ["--version"]), unzip: canRun("unzip", ["-v"]), zstd: canRun("zstd", ["--version"]) };

/** argv (the destination directory is appended) that extracts an archive with system tools, when present. */
const SYSTEM_EXTRACT: Record<ArchiveFormat, (file: string) => string[] | undefined> = {
  "tar.gz": (f) => (HAS.tar ? ["tar", "-xzf", f, "-C"] : undefined),
  "tar.zst": (f) => (HAS.tar && HAS.zstd ? ["sh", "-c", 'zstd -dc "$0" | tar -xf - -C "$1"', f] : undefined),
  zip: (f) => (HAS.unzip ? ["unzip", "-q", f, "-d"] : undefined),
};

const skip =
  longSuite("the real package's archive round-trips and rebuild", "45 s on 2 cores") ||
  (!hasBun && "needs Bun to compile");

describe("relay package build (host): the real package's archives", { skip }, () => {
  let tmp = "";
  let pkgDir = "";
  let built: BuildJson;
  let builtAt = 0;
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "relay-pkg-archives-"));
    pkgDir = path.join(tmp, "host");
    builtAt = Date.now() - 1000;
    built = parseBuild(
      relay(["build", "--package-dir", pkgDir, "--json"], cleanEnv({ RELAY_HOME: path.join(tmp, "home") })),
    );
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  test("the packaged binary builds the package again from RELAY_SOURCE_DIR, byte for byte", () => {
    const out = path.join(tmp, "from-compiled");
    const started = Date.now();
    const okBuild = spawnSync(path.join(pkgDir, "bin/relay"), ["package", "build", "--package-dir", out, "--json"], {
      cwd: "/",
      encoding: "utf8",
      env: cleanEnv({ RELAY_HOME: path.join(tmp, "home"), RELAY_SOURCE_DIR: ROOT, PATH: "/usr/bin:/bin" }),
    });
    assert.equal(okBuild.status, 0, okBuild.stderr);
    process.stderr.write(`# build from the compiled binary: ${Date.now() - started} ms\n`);
    const v = spawnSync(path.join(out, "bin/relay"), ["--version"], { cwd: "/", encoding: "utf8", env: cleanEnv() });
    assert.equal(v.stdout.trim(), VERSION);
    // Same source tree, same bun: the same bytes (bun's output depends only on them and the output name).
    const second = JSON.parse(okBuild.stdout.trim()) as BuildJson;
    if (newestSourceMtime() < builtAt)
      assert.deepEqual(second.manifest.files, built.manifest.files, "a second build is byte-identical");
    else process.stderr.write("# sources changed since the first build: byte-identity not checked\n");
    rmSync(out, { recursive: true, force: true });
  });

  for (const format of ARCHIVE_FORMATS) {
    test(`${format} of the real package round-trips to the directory: relay's reader and system tools`, async () => {
      const outDir = path.join(tmp, "archives");
      const want = snapshot(pkgDir);
      const file = path.join(outDir, `relay.${format}`);
      let started = Date.now();
      const w = await writeArchive(pkgDir, file, format);
      assert.ok("ok" in w, JSON.stringify(w));
      const writeMs = Date.now() - started;
      started = Date.now();
      const entries = await readArchive(file);
      assert.ok("ok" in entries, JSON.stringify(entries));
      assert.deepEqual(entryShapes(entries.ok), want, `${format} read back by relay`);
      const readMs = Date.now() - started;
      const v = await verifyPackage(file);
      assert.ok("ok" in v);
      assert.deepEqual(v.ok.problems, []);
      const sys = SYSTEM_EXTRACT[format](file);
      let sysNote = "system tool absent";
      if (sys) {
        const dest = path.join(outDir, `x-${format}`);
        mkdirSync(dest, { recursive: true });
        const r = spawnSync(sys[0]!, [...sys.slice(1), dest], { encoding: "utf8" });
        assert.equal(r.status, 0, `${sys.join(" ")}: ${r.stderr}`);
        assert.deepEqual(snapshot(dest), want, `${format} extracted by ${sys[0]}`);
        rmSync(dest, { recursive: true, force: true });
        sysNote = `checked with ${sys[0] === "sh" ? "zstd | tar" : sys[0]}`;
      }
      process.stderr.write(
        `# real ${format}: ${statSync(file).size} bytes, written in ${writeMs} ms, read in ${readMs} ms, ${sysNote}\n`,
      );
      rmSync(file, { force: true });
    });
  }
});
