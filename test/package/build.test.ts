import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { z } from "zod";
import { EchoMethod, RelayEchoMethod } from "../../src/cli/rpc-echo.ts";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import { defineMethod } from "../../src/contracts/method.ts";
import { parseManifest } from "../../src/package/manifest.ts";
import { hostTarget } from "../../src/package/targets.ts";
import { verifyPackage } from "../../src/package/verify.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { VERSION } from "../../src/version.ts";
import { type BuildJson, cleanEnv, hasBun, parseBuild, ROOT, relay } from "./build-support.ts";
import { fakeElf, fakePackage, writeExec } from "./fixtures.ts";

const host = hostTarget();
const hostName = "ok" in host ? host.ok.name : "unknown";
const hostIsX64Linux = process.platform === "linux" && process.arch === "x64";

describe("relay package build (host)", { skip: !hasBun && "needs Bun to compile" }, () => {
  let tmp = "";
  let home = "";
  let built: BuildJson;
  let pkgDir = "";
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "relay-pkg-"));
    home = path.join(tmp, "home");
    pkgDir = path.join(tmp, "host");
    const started = Date.now();
    built = parseBuild(relay(["build", "--package-dir", pkgDir, "--json"], cleanEnv({ RELAY_HOME: home })));
    process.stderr.write(`# host package build: ${Date.now() - started} ms, binary ${built.compiled?.bytes} bytes\n`);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  test("writes the layout and a manifest that verifies", async () => {
    const m = parseManifest(readFileSync(path.join(pkgDir, "relay-package.json"), "utf8"));
    assert.ok("ok" in m, JSON.stringify(m));
    assert.deepEqual(m.ok, built.manifest);
    assert.equal(m.ok.target, hostName);
    assert.equal(m.ok.version, VERSION);
    assert.equal(m.ok.variant, "relay");
    assert.equal(m.ok.bunVersion, process.versions.bun);
    assert.deepEqual(m.ok.entrypoints, { main: "bin/relay", codeModeHost: "bin/relay-code-mode-host" });
    assert.deepEqual(
      m.ok.files.map((f) => f.path),
      ["bin/relay", "bin/relay-code-mode-host"],
    );
    assert.ok(m.ok.files.every((f) => f.executable && f.size > 1_000_000));
    assert.equal(m.ok.files[0]!.sha256, m.ok.files[1]!.sha256, "the code-mode host is the entrypoint's binary");
    assert.equal(
      statSync(path.join(pkgDir, "bin/relay-code-mode-host")).ino,
      statSync(path.join(pkgDir, "bin/relay")).ino,
      "a hard link, not a second copy",
    );
    assert.ok(existsSync(path.join(pkgDir, "relay-path")));
    const v = await verifyPackage(pkgDir);
    assert.ok("ok" in v);
    assert.deepEqual(v.ok.problems, []);
    const cli = relay(["verify", pkgDir], cleanEnv());
    assert.equal(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^OK .*2 files match/);
  });

  test("the packaged binary prints its version from any directory", () => {
    for (const bin of ["relay", "relay-code-mode-host"]) {
      const v = spawnSync(path.join(pkgDir, "bin", bin), ["--version"], {
        cwd: "/",
        encoding: "utf8",
        env: cleanEnv(),
      });
      assert.equal(v.status, 0, v.stderr);
      assert.equal(v.stdout.trim(), VERSION);
    }
  });

  test("the packaged binary re-execs itself (relay_echo through a grandchild)", async () => {
    for (const bin of ["relay", "relay-code-mode-host"]) {
      const c = spawnPeer([path.join(pkgDir, "bin", bin), "rpc-echo"], {
        cwd: "/",
        env: cleanEnv(),
        name: `packaged ${bin}`,
      });
      assert.ok("ok" in c, JSON.stringify(c));
      assert.deepEqual(await c.ok.peer.call(EchoMethod, "hi"), { ok: "hi" });
      const r = await c.ok.peer.call(RelayEchoMethod, { through: bin });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.deepEqual(r.ok.echoed, { through: bin });
      assert.notEqual(r.ok.childPid, r.ok.selfPid);
      const exit = await c.ok.shutdown();
      assert.equal(exit.code, 0);
    }
  });

  test("bin/relay-code-mode-host started without arguments serves code mode (the client runs it that way)", async () => {
    const Hello = defineMethod(
      "codemode/hello",
      z.object({}).passthrough(),
      z.object({ pid: z.number() }).passthrough(),
      [],
    );
    const c = spawnPeer([path.join(pkgDir, "bin/relay-code-mode-host")], {
      cwd: "/",
      env: cleanEnv(),
      name: "packaged code-mode host",
    });
    assert.ok("ok" in c, JSON.stringify(c));
    const r = await c.ok.peer.call(Hello, {});
    assert.ok("ok" in r, `${JSON.stringify(r)} ${c.ok.stderr}`);
    assert.equal(r.ok.pid, c.ok.pid);
    const exit = await c.ok.shutdown();
    assert.equal(exit.code, 0);
  });

  test("prebuilt binaries are used as they are (never rebuilt); variant and rg", {
    skip: !hostIsX64Linux && "uses an x64 ELF fake rg",
  }, async () => {
    const prebuilt = path.join(tmp, "prebuilt-relay");
    copyFileSync(path.join(pkgDir, "bin/relay"), prebuilt);
    chmodSync(prebuilt, 0o755);
    const rg = writeExec(path.join(tmp, "rg"), fakeElf(62, 2048));
    const out = path.join(tmp, "exec-pkg");
    const started = Date.now();
    const b = parseBuild(
      relay(
        [
          "build",
          "--variant",
          "relay-executor",
          "--package-dir",
          out,
          "--entrypoint-bin",
          prebuilt,
          "--rg-bin",
          rg,
          "--json",
        ],
        cleanEnv({ RELAY_HOME: home }),
      ),
    );
    process.stderr.write(`# prebuilt package: ${Date.now() - started} ms\n`);
    assert.equal(b.compiled, null);
    assert.deepEqual(
      b.manifest.files.map((f) => f.path),
      ["bin/relay-code-mode-host", "bin/relay-executor", "relay-path/rg"],
    );
    assert.equal(b.manifest.entrypoints.main, "bin/relay-executor");
    assert.deepEqual(readFileSync(path.join(out, "bin/relay-executor")), readFileSync(prebuilt));
    assert.deepEqual(readFileSync(path.join(out, "relay-path/rg")), readFileSync(rg));
    assert.equal(statSync(path.join(out, "relay-path/rg")).mode & 0o777, 0o755);
    // The real package's archives are written and read back by build-archives.test.ts (long step).
    assert.equal(b.archives.length, 0);
    const v = await verifyPackage(out);
    assert.ok("ok" in v);
    assert.deepEqual(v.ok.problems, []);
    // Run bare, bin/relay-executor serves the executor protocol (`ssh host relay-executor`).
    const ex = spawnPeer([path.join(out, "bin/relay-executor")], {
      cwd: "/",
      env: cleanEnv(),
      name: "packaged relay-executor",
    });
    assert.ok("ok" in ex, JSON.stringify(ex));
    const info = await ex.ok.peer.call(ExecutorMethods.info, {}, { timeoutMs: 30_000 });
    assert.ok("ok" in info, `${JSON.stringify(info)} ${ex.ok.stderr}`);
    assert.equal(info.ok.version, VERSION);
    assert.equal((await ex.ok.shutdown()).code, 0);
    // A non-empty package dir that was named needs --force ...
    const again = relay(["build", "--package-dir", out, "--entrypoint-bin", prebuilt], cleanEnv({ RELAY_HOME: home }));
    assert.equal(again.status, 2);
    assert.match(again.stderr, /is not empty \(pass --force/);
    const forced = relay(
      ["build", "--package-dir", out, "--entrypoint-bin", prebuilt, "--force"],
      cleanEnv({ RELAY_HOME: home }),
    );
    assert.equal(forced.status, 0, forced.stderr);
    // ... while the default directory (dist/package/<variant>-<target> under cwd) is build output, replaced on every run.
    const cwd = path.join(tmp, "cwd");
    mkdirSync(cwd);
    for (let i = 0; i < 2; i++) {
      const d = relay(["build", "--entrypoint-bin", prebuilt], cleanEnv({ RELAY_HOME: home }), cwd);
      assert.equal(d.status, 0, d.stderr);
      assert.match(
        d.stdout,
        new RegExp(`Built relay package directory at ${path.join(cwd, "dist/package", `relay-${hostName}`)} `),
      );
    }
  });

  test("bad targets, variants, archive formats and overrides: exit 2 with a clear message", () => {
    const env = cleanEnv({ RELAY_HOME: home });
    const out = path.join(tmp, "bad");
    const cases: [string[], RegExp][] = [
      [["--target", "linux-mips"], /unknown target 'linux-mips'; supported targets: linux-x64, linux-x64-baseline/],
      [["--variant", "relay-server"], /argument 'relay-server' is invalid\. Allowed choices are relay, relay-executor/],
      [["--archive", "tar.gz,7z"], /unknown archive format '7z'/],
      [["--entrypoint-bin", path.join(tmp, "nope")], /--entrypoint-bin .*nope: no such file/],
      [["--rg-bin", path.join(tmp, "nope-rg")], /--rg-bin .*: no such file/],
      [
        ["--target", "linux-arm64", "--entrypoint-bin", path.join(pkgDir, "bin/relay")],
        /--entrypoint-bin: .* is ELF 64-bit x64.*, not a linux-arm64 executable/,
      ],
      [
        ["--target", "windows-x64", "--compile-executable-path", path.join(pkgDir, "bin/relay")],
        /--compile-executable-path: .*not a windows-x64 executable \(format elf/,
      ],
    ];
    if (hostIsX64Linux) {
      const script = writeExec(path.join(tmp, "script.sh"), "#!/bin/sh\necho hi\n");
      cases.push([["--code-mode-host-bin", script], /--code-mode-host-bin: .*not an ELF, Mach-O or PE executable/]);
      const noexec = path.join(tmp, "noexec");
      writeFileSync(noexec, fakeElf(62));
      chmodSync(noexec, 0o644);
      cases.push([["--entrypoint-bin", noexec], /not executable/]);
    }
    for (const [args, re] of cases) {
      const r = relay(["build", "--package-dir", out, ...args], env);
      assert.equal(r.status, 2, `${args.join(" ")}: exit ${r.status}\n${r.stderr}`);
      assert.match(r.stderr, re, args.join(" "));
    }
    assert.equal(existsSync(out), false, "nothing is created when the request is refused");
    const bv = relay(["verify", path.join(tmp, "nothing-here.tar.gz")], env);
    assert.equal(bv.status, 2);
    const help = relay(["build", "--help"], env);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--compile-executable-path/);
    assert.match(help.stdout, /RELAY_HOME\/cache\/bun/);
  });

  test("relay package verify: exit 1 with the list of problems, --json report", async () => {
    const dir = path.join(tmp, "fake");
    await fakePackage(dir);
    const good = relay(["verify", dir, "--json"], cleanEnv());
    assert.equal(good.status, 0, good.stderr);
    assert.deepEqual(JSON.parse(good.stdout), {
      ok: true,
      source: dir,
      kind: "dir",
      files: 5,
      target: "linux-x64",
      problems: [],
    });
    writeFileSync(path.join(dir, "relay-path/README.txt"), "changed!!\n");
    writeFileSync(path.join(dir, "stray"), "x");
    const bad = relay(["verify", dir], cleanEnv());
    assert.equal(bad.status, 1);
    assert.match(
      bad.stdout,
      /^FAILED .*: 2 problem\(s\)\n {2}size mismatch: relay-path\/README.txt .*\n {2}extra file: stray\n$/,
    );
  });

  test("from the compiled binary: packages itself without a source tree, and a clear error without bun (its real build with RELAY_SOURCE_DIR: build-archives.test.ts)", () => {
    const bin = path.join(pkgDir, "bin/relay");
    const out = path.join(tmp, "from-compiled");
    // Without a source tree the host target packages the running binary itself.
    const selfOut = path.join(tmp, "from-compiled-self");
    const noSrc = spawnSync(bin, ["package", "build", "--package-dir", selfOut], {
      cwd: "/",
      encoding: "utf8",
      env: cleanEnv({ RELAY_HOME: home }),
    });
    assert.equal(noSrc.status, 0, noSrc.stderr);
    assert.match(noSrc.stderr, /no source tree: packaged the running binary itself/);
    assert.equal(
      spawnSync(path.join(selfOut, "bin/relay"), ["--version"], { encoding: "utf8", env: cleanEnv() }).stdout.trim(),
      VERSION,
    );
    const noBun = spawnSync(bin, ["package", "build", "--package-dir", out], {
      cwd: "/",
      encoding: "utf8",
      env: cleanEnv({ RELAY_HOME: home, RELAY_SOURCE_DIR: ROOT, RELAY_BUN_PATH: path.join(tmp, "no-bun") }),
    });
    assert.equal(noBun.status, 1);
    assert.match(noBun.stderr, /RELAY_BUN_PATH=.*no-bun is not an executable file/);
  });
});

// A persistent RELAY_HOME so repeated runs fetch @oven/bun-linux-aarch64 once.
