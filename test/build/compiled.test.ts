import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { EchoMethod, RelayEchoMethod } from "../../src/cli/rpc-echo.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { VERSION } from "../../src/version.ts";
import { buildBinary } from "../../scripts/build.ts";

// Compiling needs Bun; the portable runs under Node and Deno skip this file's body.
const hasBun = Boolean(process.versions.bun);

describe("compiled relay binary", { skip: !hasBun && "needs Bun to compile" }, () => {
  let dir = "";
  let bin = "";
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "relay-build-"));
    bin = buildBinary({ outfile: path.join(dir, "relay") }).outfile;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const cleanEnv = () => {
    const env = { ...process.env };
    delete env.RELAY_SELF_COMMAND;
    return env;
  };

  test("prints its version and rejects unknown commands with exit 2, from any directory", () => {
    const v = spawnSync(bin, ["--version"], { cwd: "/", encoding: "utf8", env: cleanEnv() });
    assert.equal(v.status, 0);
    assert.equal(v.stdout.trim(), VERSION);
    const bad = spawnSync(bin, ["frobnicate"], { cwd: "/", encoding: "utf8", env: cleanEnv() });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /unknown command 'frobnicate'/);
  });

  test("a lone copy with an empty home: the sandbox works with nothing installed", { skip: process.platform !== "linux" && "the built-in sandbox is Linux only" }, () => {
    const machine = mkdtempSync(path.join(os.tmpdir(), "relay-lone-"));
    try {
      const lone = path.join(machine, "bin", "relay");
      mkdirSync(path.dirname(lone));
      copyFileSync(bin, lone);
      chmodSync(lone, 0o755);
      const home = path.join(machine, "home");
      const ws = path.join(home, "project");
      mkdirSync(path.join(ws, ".git"), { recursive: true });
      // Only what a fresh login has: no RELAY_HOME, no source tree, bubblewrap out of the picture.
      const env = { PATH: "/usr/bin:/bin", HOME: home, RELAY_SANDBOX_SIMULATE: "no-bwrap" };
      const run = (args: string[]) => spawnSync(lone, args, { cwd: ws, encoding: "utf8", env });
      const outside = path.join(home, "outside.txt");
      const refused = run(["sandbox", "--", "sh", "-c", `echo x > ${outside}`]);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /Permission denied/);
      assert.ok(!existsSync(outside));
      const inside = run(["sandbox", "--", "sh", "-c", "echo y > made.txt && cat made.txt && (echo z > .git/hook) 2>/dev/null || echo git-read-only"]);
      assert.equal(inside.status, 0, inside.stderr);
      assert.equal(inside.stdout, "y\ngit-read-only\n");
      const check = run(["executor", "--check", "--json"]);
      assert.equal(check.status, 0, check.stderr);
      assert.match(check.stdout, /"sandboxed_command":\{"output":"ok","exit_code":0/);
      const doctor = run(["doctor", "--json"]);
      const report = JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> };
      const sandbox = report.checks.find((c) => c.name === "sandbox");
      assert.equal(sandbox?.status, "ok", sandbox?.detail);
      assert.match(sandbox?.detail ?? "", /^landlock/);
      assert.equal(readdirSync(os.tmpdir()).filter((f) => f.startsWith("relay-cc-")).length, 0, "no compile leftovers in the temp dir");
      // It packages itself for its own target, with no source tree or bun to compile with.
      const built = run(["package", "build", "--package-dir", path.join(machine, "pkg")]);
      assert.equal(built.status, 0, built.stderr);
      assert.match(built.stderr, /packaged the running binary itself/);
      const verified = run(["package", "verify", path.join(machine, "pkg")]);
      assert.equal(verified.status, 0, verified.stderr);
      const packaged = spawnSync(path.join(machine, "pkg", "bin", "relay"), ["--version"], { encoding: "utf8", env });
      assert.equal(packaged.stdout.trim(), VERSION);
      const other = process.arch === "arm64" ? "linux-x64" : "linux-arm64";
      const cross = run(["package", "build", "--target", other, "--package-dir", path.join(machine, "pkg-cross")]);
      assert.equal(cross.status, 1);
      assert.match(cross.stderr, new RegExp(`packages itself only for its own target .*a ${other} package needs the Relay source tree .*--entrypoint-bin`));
      assert.ok(!existsSync(path.join(machine, "pkg-cross")), "nothing was left behind");
    } finally {
      rmSync(machine, { recursive: true, force: true });
    }
  });

  test("re-execs itself: the binary's child spawns the same binary again", async () => {
    const c = spawnPeer([bin, "rpc-echo"], { cwd: "/", env: cleanEnv(), name: "compiled" });
    assert.ok("ok" in c);
    assert.deepEqual(await c.ok.peer.call(EchoMethod, "hi"), { ok: "hi" });
    const r = await c.ok.peer.call(RelayEchoMethod, { through: "grandchild" });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.deepEqual(r.ok.echoed, { through: "grandchild" });
    assert.notEqual(r.ok.childPid, r.ok.selfPid);
    const exit = await c.ok.shutdown();
    assert.equal(exit.code, 0);
  });
});
