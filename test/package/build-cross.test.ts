/**
 * `relay package build --target` for other platforms: a linux-arm64 build (run under qemu where
 * it is installed) and windows-x64 and darwin-arm64 builds checked by their headers. Each fetches
 * and compiles a whole Bun runtime, so this is a long suite: .ci/run runs it as its own step,
 * and `npm test` skips it with the reason (RELAY_LONG_TESTS=1 runs it here).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { RelayEchoMethod } from "../../src/cli/rpc-echo.ts";
import { readBinaryHeader } from "../../src/package/binary-header.ts";
import { ensureTargetBun, registryFetcher } from "../../src/package/bun-cache.ts";
import { TARGETS } from "../../src/package/targets.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { VERSION } from "../../src/version.ts";
import { longSuite } from "../support/long.ts";
import { cleanEnv, hasBun, parseBuild, relay } from "./build-support.ts";

const skip =
  longSuite("the package cross-builds", "half a minute or more on 2 cores, more when fetching runtimes") ||
  (!hasBun && "needs Bun to compile");

const CROSS_HOME = process.env.RELAY_PACKAGE_TEST_HOME ?? path.join(os.tmpdir(), "relay-package-test-home");

function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const f = path.join(dir, cmd);
    if (dir && existsSync(f)) return f;
  }
  return undefined;
}

const FETCH_FAILED = /fetch_failed|cannot download|GET .*: HTTP \d+/;

describe("relay package build --target linux-arm64 (cross)", { skip }, () => {
  let tmp = "";
  let result: ReturnType<typeof relay> | undefined;
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "relay-pkg-arm-"));
    mkdirSync(CROSS_HOME, { recursive: true });
    const started = Date.now();
    result = relay(
      ["build", "--target", "linux-arm64", "--package-dir", path.join(tmp, "arm64"), "--json"],
      cleanEnv({ RELAY_HOME: CROSS_HOME }),
    );
    process.stderr.write(`# linux-arm64 cross build: ${Date.now() - started} ms (exit ${result.status})\n`);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const cachedRuntime = () => path.join(CROSS_HOME, "cache", "bun", process.versions.bun!, "linux-arm64", "bun");

  test("produces an aarch64 ELF and caches the target runtime with meta", (t) => {
    if (result?.status !== 0 && FETCH_FAILED.test(result?.stderr ?? "")) {
      t.skip(`cannot fetch @oven/bun-linux-aarch64 (offline?): ${result?.stderr.trim().slice(-300)}`);
      return;
    }
    const b = parseBuild(result!);
    assert.equal(b.manifest.target, "linux-arm64");
    const bin = path.join(b.packageDir, "bin/relay");
    const h = readBinaryHeader(bin);
    assert.ok("ok" in h);
    assert.equal(h.ok.format, "elf");
    assert.equal(h.ok.bits, 64);
    assert.equal(h.ok.arch, "arm64");
    assert.match(h.ok.interpreter ?? "", /ld-linux-aarch64/);
    const metaPath = path.join(path.dirname(cachedRuntime()), "meta.json");
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as { size: number; sha256: string; package: string };
    assert.equal(meta.package, "@oven/bun-linux-aarch64");
    assert.equal(statSync(cachedRuntime()).size, meta.size);
    process.stderr.write(
      `# arm64 runtime ${b.compiled?.fetched ? "fetched" : "reused from cache"}; packaged binary ${b.compiled?.bytes} bytes\n`,
    );
  });

  test("offline with --compile-executable-path: nothing is fetched or cached", (t) => {
    if (!existsSync(cachedRuntime())) return void t.skip("no cached linux-arm64 runtime (the fetch above was skipped)");
    const home = path.join(tmp, "fresh-home");
    const b = parseBuild(
      relay(
        [
          "build",
          "--target",
          "linux-arm64",
          "--package-dir",
          path.join(tmp, "offline"),
          "--compile-executable-path",
          cachedRuntime(),
          "--json",
        ],
        cleanEnv({ RELAY_HOME: home }),
      ),
    );
    assert.equal(b.compiled?.compileExecutablePath, cachedRuntime());
    assert.equal(b.compiled?.fetched, undefined);
    assert.equal(existsSync(path.join(home, "cache")), false);
    const h = readBinaryHeader(path.join(tmp, "offline", "bin/relay"));
    assert.ok("ok" in h && h.ok.arch === "arm64");
  });

  test("a corrupted cached runtime is detected and fetched again through npm", async (t) => {
    if (!existsSync(cachedRuntime())) return void t.skip("no cached linux-arm64 runtime (the fetch above was skipped)");
    const bin = cachedRuntime();
    const before = readFileSync(path.join(path.dirname(bin), "meta.json"), "utf8");
    const bytes = readFileSync(bin);
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff; // same size, different sha256
    writeFileSync(bin, bytes);
    const started = Date.now();
    const r = await ensureTargetBun({
      home: CROSS_HOME,
      version: process.versions.bun!,
      target: TARGETS["linux-arm64"],
      fetcher: registryFetcher,
    });
    if ("error" in r && FETCH_FAILED.test(r.error.message))
      return void t.skip(`cannot refetch (offline?): ${r.error.message}`);
    assert.ok("ok" in r, JSON.stringify(r));
    process.stderr.write(`# corrupted arm64 runtime refetched in ${Date.now() - started} ms\n`);
    assert.equal(r.ok.fetched, true);
    assert.match(r.ok.notes.join("\n"), /is unusable \(sha256 .* != recorded .*\); refetching/);
    const meta = JSON.parse(readFileSync(path.join(path.dirname(bin), "meta.json"), "utf8")) as {
      sha256: string;
      size: number;
    };
    assert.equal(meta.sha256, (JSON.parse(before) as { sha256: string }).sha256, "the same runtime came back");
    const again = await ensureTargetBun({
      home: CROSS_HOME,
      version: process.versions.bun!,
      target: TARGETS["linux-arm64"],
      fetcher: registryFetcher,
    });
    assert.ok("ok" in again && !again.ok.fetched);
  });

  test("runs under qemu-aarch64 when installed", (t) => {
    const qemu = which("qemu-aarch64-static") ?? which("qemu-aarch64");
    const sysroot = "/usr/aarch64-linux-gnu";
    if (!qemu)
      return void t.skip("qemu-aarch64(-static) not installed (apt-get install qemu-user-static libc6-arm64-cross)");
    if (!existsSync(path.join(sysroot, "lib")))
      return void t.skip("no aarch64 sysroot at /usr/aarch64-linux-gnu (apt-get install libc6-arm64-cross)");
    if (result?.status !== 0) return void t.skip("the cross build did not run");
    const bin = path.join(tmp, "arm64", "bin/relay");
    const r = spawnSync(qemu, ["-L", sysroot, bin, "--version"], {
      cwd: "/",
      encoding: "utf8",
      env: cleanEnv(),
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), VERSION);
  });

  test("under qemu, the arm64 binary serves the protocol and starts a second copy of itself", async (t) => {
    const qemu = which("qemu-aarch64-static") ?? which("qemu-aarch64");
    const sysroot = "/usr/aarch64-linux-gnu";
    if (!qemu || !existsSync(path.join(sysroot, "lib")))
      return void t.skip("needs qemu-user-static and libc6-arm64-cross");
    if (result?.status !== 0) return void t.skip("the cross build did not run");
    // Without binfmt_misc the kernel cannot exec an aarch64 file directly, so the re-exec goes
    // through RELAY_SELF_COMMAND = qemu + the same binary.
    const self = [qemu, "-L", sysroot, path.join(tmp, "arm64", "bin/relay")];
    const c = spawnPeer([...self, "rpc-echo"], {
      cwd: "/",
      env: cleanEnv({ RELAY_SELF_COMMAND: joinCommandLine(self) }),
      name: "arm64 under qemu",
    });
    assert.ok("ok" in c, JSON.stringify(c));
    const r = await c.ok.peer.call(RelayEchoMethod, { arch: "arm64" }, { timeoutMs: 60_000 });
    assert.ok("ok" in r, `${JSON.stringify(r)} ${c.ok.stderr}`);
    assert.deepEqual(r.ok.echoed, { arch: "arm64" });
    assert.equal((await c.ok.shutdown(10_000)).code, 0);
  });
});

describe("relay package build: windows-x64 and darwin-arm64 (cross, headers only)", {
  skip,
}, () => {
  let tmp = "";
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "relay-pkg-x-"));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const cases = [
    { target: "windows-x64", files: ["bin/relay-code-mode-host.exe", "bin/relay.exe"], format: "pe", arch: "x64" },
    { target: "darwin-arm64", files: ["bin/relay", "bin/relay-code-mode-host"], format: "macho", arch: "arm64" },
  ] as const;
  for (const c of cases) {
    test(`${c.target}: ${c.format} ${c.arch} binaries named ${c.files.join(", ")}`, (t) => {
      const started = Date.now();
      const r = relay(
        ["build", "--target", c.target, "--package-dir", path.join(tmp, c.target), "--json"],
        cleanEnv({ RELAY_HOME: CROSS_HOME }),
      );
      if (r.status !== 0 && FETCH_FAILED.test(r.stderr))
        return void t.skip(`cannot fetch the ${c.target} runtime (offline?)`);
      const b = parseBuild(r);
      process.stderr.write(
        `# ${c.target} cross build: ${Date.now() - started} ms, binary ${b.compiled?.bytes} bytes\n`,
      );
      assert.deepEqual(
        b.manifest.files.map((f) => f.path),
        c.files,
      );
      assert.equal(
        b.manifest.entrypoints.main,
        c.files.find((f) => f.startsWith("bin/relay.") || f === "bin/relay"),
      );
      for (const f of c.files) {
        const h = readBinaryHeader(path.join(b.packageDir, f));
        assert.ok("ok" in h);
        assert.equal(h.ok.format, c.format);
        assert.equal(h.ok.arch, c.arch);
        assert.equal(h.ok.bits, 64);
      }
    });
  }
});
