import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import { type ChildPeer, spawnCommandLine } from "../../src/protocol/child.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { exec, startExecutor } from "../support/executor.ts";
import { relayArgv } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const sandbox = await probeSandbox();
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

describe("sandbox attempts", {
  skip: skipBecause("sandbox attempts", !sandbox.available && `no sandbox mechanism works here: ${sandbox.detail}`),
}, () => {
  let ex: ChildPeer;
  let root = "";
  let outside = "";
  before(async () => {
    ex = await startExecutor();
    root = mkdtempSync(path.join(os.tmpdir(), "relay-ws-"));
    outside = mkdtempSync(path.join(os.homedir(), ".relay-outside-"));
    mkdirSync(path.join(root, ".git"));
  });
  after(async () => {
    await ex.shutdown();
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  test("read-only: reads work, writes anywhere fail, no network", async () => {
    writeFileSync(path.join(root, "in.txt"), "readable\n");
    const server = net.createServer((s) => s.end());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    const probe = (cmd: string) =>
      exec(ex, {
        command: ["bash", "-c", cmd],
        cwd: root,
        env,
        sandbox: { mode: "read-only", writable_roots: [], network: false },
      });
    try {
      const r = await probe(
        `cat in.txt; touch new.txt 2>/dev/null && echo wrote || echo write-denied; (echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo net-ok || echo net-denied`,
      );
      assert.equal(r.output, "readable\nwrite-denied\nnet-denied\n");
      assert.ok(!existsSync(path.join(root, "new.txt")));
      const open = await exec(ex, {
        command: ["bash", "-c", `(echo > /dev/tcp/127.0.0.1/${port}) && echo net-ok`],
        cwd: root,
        env,
      });
      assert.equal(open.output, "net-ok\n", "the same probe reaches the server without a sandbox");
    } finally {
      server.close();
    }
  });

  test("workspace-write: writes inside the roots work, outside and in .git they fail", async () => {
    const r = await exec(ex, {
      command: [
        "sh",
        "-c",
        `touch inside.txt && echo in-ok; touch ${outside}/x 2>/dev/null && echo out-ok || echo out-denied; touch .git/hook 2>/dev/null && echo git-ok || echo git-denied`,
      ],
      cwd: root,
      env,
      sandbox: { mode: "workspace-write", writable_roots: [root], network: false },
    });
    assert.equal(r.output, "in-ok\nout-denied\ngit-denied\n");
    assert.ok(existsSync(path.join(root, "inside.txt")));
    assert.ok(!existsSync(path.join(outside, "x")));
  });

  test("danger-full-access runs without a sandbox", async () => {
    const r = await exec(ex, {
      command: ["sh", "-c", `touch ${outside}/free && echo ok`],
      cwd: root,
      env,
      sandbox: { mode: "danger-full-access", writable_roots: [], network: true },
    });
    assert.equal(r.output, "ok\n");
  });
});

describe("sandbox fails closed", () => {
  test("a requested sandbox that cannot be applied refuses to run the command and says how to fix it", async () => {
    await using ex = await startExecutor({ RELAY_SANDBOX_DISABLE: "1" });
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-closed-"));
    try {
      const r = await ex.peer.call(ExecutorMethods.exec, {
        command: ["touch", "should-not-exist"],
        cwd: dir,
        env,
        sandbox: { mode: "workspace-write", writable_roots: [dir], network: false },
      });
      assert.ok("error" in r);
      assert.equal(r.error.code, "sandbox_unavailable");
      assert.match(
        r.error.message,
        /the workspace-write sandbox cannot be applied on this host: disabled by RELAY_SANDBOX_DISABLE=1\. The command was not run\..*danger-full-access/,
      );
      assert.ok(!existsSync(path.join(dir, "should-not-exist")));
      const info = await ex.peer.call(ExecutorMethods.info, {});
      assert.ok("ok" in info && info.ok.sandbox.available === false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("remote executor transport", () => {
  test("any command line that gives a stdio pipe is an executor", async () => {
    // `sh -c 'exec relay executor'` stands in for `ssh host relay executor`.
    const line = joinCommandLine(["sh", "-c", `exec ${joinCommandLine(relayArgv())} executor`]);
    const c = spawnCommandLine(line, { name: "remote-executor" });
    assert.ok("ok" in c);
    const info = await c.ok.peer.call(ExecutorMethods.info, {});
    assert.ok("ok" in info);
    assert.equal(info.ok.hostname, os.hostname());
    const r = await exec(c.ok, { command: ["sh", "-c", "echo remote $((6*7))"] });
    assert.equal(r.output, "remote 42\n");
    await c.ok.shutdown();
  });
});
