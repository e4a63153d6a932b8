import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
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
