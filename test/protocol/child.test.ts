import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { EchoMethod, RelayEchoMethod, SleepMethod } from "../../src/cli/rpc-echo.ts";
import { spawnCommandLine, spawnPeer, spawnSelf } from "../../src/protocol/child.ts";
import { joinCommandLine, splitCommandLine } from "../../src/protocol/command-line.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";

useTestRelay();

function spawnEcho() {
  const c = spawnSelf("rpc-echo");
  assert.ok("ok" in c, JSON.stringify(c));
  return c.ok;
}

describe("child peers", () => {
  test("spawnSelf starts relay's own subcommand and talks to it", async () => {
    const child = spawnEcho();
    assert.deepEqual(await child.peer.call(EchoMethod, { hello: ["wörld", 1] }), { ok: { hello: ["wörld", 1] } });
    const exit = await child.shutdown();
    assert.equal(exit.code, 0, "closing stdin makes the server exit cleanly");
  });

  test("a child can re-exec relay again (grandchild)", async () => {
    const child = spawnEcho();
    const r = await child.peer.call(RelayEchoMethod, { deep: true });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.deepEqual(r.ok.echoed, { deep: true });
    assert.notEqual(r.ok.childPid, r.ok.selfPid);
    await child.shutdown();
  });

  test("a child killed mid-request fails the pending call with its exit status", async () => {
    const child = spawnEcho();
    await child.peer.call(EchoMethod, 1); // started and serving
    const pending = child.peer.call(SleepMethod, { ms: 30_000 });
    child.kill("SIGKILL");
    const r = await pending;
    assert.ok("error" in r);
    assert.equal(r.error.code, "peer_closed");
    assert.match(
      r.error.message,
      /sleep failed: rpc-echo closed the connection \(its output stream ended; process killed by SIGKILL\)/,
    );
  });

  test("a child that prints text instead of frames is diagnosed", async () => {
    const c = spawnPeer(["sh", "-c", "echo 'Welcome to the server'; sleep 5"], { name: "chatty" });
    assert.ok("ok" in c);
    const r = await c.ok.peer.call(EchoMethod, 1);
    assert.ok("error" in r);
    assert.match(r.error.message, /chatty closed the connection \(protocol error: .*"Welc".*printed to stdout/);
    c.ok.kill();
  });

  test("a command that does not exist fails calls with the reason", async () => {
    const c = spawnPeer(["/nonexistent/relay-executor"], { name: "ghost" });
    assert.ok("ok" in c);
    const r = await c.ok.peer.call(EchoMethod, 1);
    assert.ok("error" in r);
    assert.match(r.error.message, /ghost closed the connection/);
    assert.match(r.error.message, /ENOENT|could not start|exited/);
  });

  test("a child that exits with an error reports its stderr tail", async () => {
    const c = spawnPeer(["sh", "-c", "echo 'fatal: config is broken' >&2; exit 3"], { name: "broken" });
    assert.ok("ok" in c);
    const r = await c.ok.peer.call(EchoMethod, 1);
    assert.ok("error" in r);
    assert.match(r.error.message, /process exited with code 3; last stderr: fatal: config is broken/);
  });

  test("a user command line works as the transport (the remote-executor shape)", async () => {
    // `sh -c '<relay> rpc-echo'` stands in for `ssh host relay rpc-echo`.
    const line = joinCommandLine(["sh", "-c", `exec ${joinCommandLine(relayArgv())} rpc-echo`]);
    const c = spawnCommandLine(line, { name: "remote" });
    assert.ok("ok" in c, JSON.stringify(c));
    assert.deepEqual(await c.ok.peer.call(EchoMethod, "via shell"), { ok: "via shell" });
    await c.ok.shutdown();
  });

  test("the frame limit is configurable on both ends", async () => {
    const c = spawnSelf("rpc-echo", ["--frame-limit", "1024"], { frameLimit: 1 << 20 });
    assert.ok("ok" in c);
    const small = await c.ok.peer.call(EchoMethod, "a".repeat(100));
    assert.ok("ok" in small);
    const big = await c.ok.peer.call(EchoMethod, "a".repeat(5000));
    assert.ok("error" in big);
    // the child refuses the frame and closes; we report why
    assert.match(big.error.message, /over the 1024-byte limit|closed the connection/);
    c.ok.kill();
  });
});

describe("command lines", () => {
  test("split follows shell quoting", () => {
    assert.deepEqual(splitCommandLine(`ssh -p 22 "my host" 'relay executor' a\\ b "x\\"y"`), {
      ok: ["ssh", "-p", "22", "my host", "relay executor", "a b", 'x"y'],
    });
    assert.deepEqual(splitCommandLine(`a '' ""`), { ok: ["a", "", ""] });
  });

  test("bad command lines are errors", () => {
    const open = splitCommandLine(`ssh 'host`);
    assert.ok("error" in open && /cannot split the command line `ssh 'host`: unterminated '/.test(open.error.message));
    const empty = splitCommandLine("   ");
    assert.ok("error" in empty && /empty/.test(empty.error.message));
    // What only a shell would do is refused with the fix, never run half-understood.
    for (const line of ["ssh host; rm -rf x", "ssh host | tee log", "A=1 ssh host", "ssh host > log"]) {
      const r = splitCommandLine(line);
      assert.ok(
        "error" in r && /is not one program and its arguments: relay runs it without a shell/.test(r.error.message),
        line,
      );
    }
    for (const line of ["ssh $HOST relay executor", "ssh host $(which relay)", "ssh host*"]) {
      const r = splitCommandLine(line);
      assert.ok("error" in r && /would need a shell to expand/.test(r.error.message), line);
    }
  });

  test("join quotes what needs quoting and splits back to the same argv", () => {
    const argv = ["/usr/bin/env", "a b", "it's", "$HOME", ""];
    const r = splitCommandLine(joinCommandLine(argv));
    assert.deepEqual(r, { ok: argv });
  });
});

void z;
