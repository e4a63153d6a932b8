/**
 * Bad frames sent to relay's framed servers over real pipes, and from a child to the parent:
 * a payload that is not a message is reported (or answered) and the server goes on; a frame
 * error that desynchronises the stream ends it with exit 1 and one line on stderr.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFileSync, spawn } from "node:child_process";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { EchoMethod } from "../../src/cli/rpc-echo.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { isAlive } from "../support/executor.ts";
import { header, RawChild, rawFrame, requestFrame } from "../support/raw-frames.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

useTestRelay();

const servers = [
  { args: ["executor"], name: "executor", probe: "process/list" },
  { args: ["code-mode-host"], name: "code-mode-host", probe: "codemode/hello" },
  { args: ["rpc-echo"], name: "rpc-echo", probe: "echo" },
];

/** stderr split into lines; a crash shows up as a stack trace, i.e. lines that are not relay's own. */
function stderrLines(c: RawChild): string[] {
  return c.stderr.split("\n").filter((l) => l.trim() !== "");
}

describe("framed servers: bad frames", () => {
  for (const s of servers) {
    test(`${s.name}: a zero-length frame is reported and the next request is answered`, async () => {
      const c = new RawChild(s.args);
      await c.write(requestFrame(1, s.probe));
      assert.ok(await c.response("1"), `no answer to the first request; stderr: ${c.stderr}`);
      // On its own (as from printf | relay executor): the frame ends where the read does.
      await c.write(header(0));
      await c.write(requestFrame(2, s.probe));
      const answer = await c.response("2");
      assert.ok(
        answer?.value.result && "ok" in answer.value.result,
        `no answer after a zero-length frame; stderr: ${c.stderr}`,
      );
      c.end();
      assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
      assert.deepEqual(stderrLines(c), [
        `relay: ${s.name}: skipped a 0-byte frame: the frame payload is empty (a frame carries one JSON message)`,
      ]);
    });
  }

  test("rpc-echo: once its parent is gone, answers nobody reads do not keep the server alive", {
    // Node and Deno write to a piped stdout synchronously: a full pipe nobody reads blocks them.
    skip: skipBecause(
      "an orphaned server's exit",
      !process.versions.bun && "a piped stdout blocks Node and Deno when full",
    ),
  }, async () => {
    // A shell starts the server with stdout on a fifo, then waits for a line on its stdin. The
    // test reads the first (small) answer, so the server is serving, then stops reading with a
    // 4 MiB answer queued, and ends the shell: the server, orphaned, exits without the answer
    // (it waits up to a minute for a parent that lives, longer than this test may take).
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-orphan-"));
    const fifo = path.join(dir, "out");
    execFileSync("mkfifo", [fifo]);
    const req = path.join(dir, "req");
    writeFileSync(req, Buffer.concat([requestFrame(1, "echo", "hi"), requestFrame(2, "echo", "x".repeat(4 << 20))]));
    const out = createReadStream(fifo);
    const first = new Promise<void>((resolve) => out.once("data", () => resolve()));
    const [cmd, ...pre] = relayArgv();
    const shell = spawn(
      "sh",
      ["-c", '"$@" rpc-echo <"$REQ" >"$FIFO" 2>/dev/null & echo $!; read line', "sh", cmd!, ...pre],
      {
        env: { ...process.env, REQ: req, FIFO: fifo },
        stdio: ["pipe", "pipe", "ignore"],
      },
    );
    const pid = await new Promise<number>((resolve) =>
      shell.stdout.once("data", (d: Buffer) => resolve(Number(String(d).trim()))),
    );
    await first;
    out.pause();
    shell.stdin.end("go\n");
    await new Promise((r) => shell.once("close", r));
    await waitFor(() => !isAlive(pid), "the orphaned rpc-echo to exit");
    out.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  test("rpc-echo: a 4 MiB answer to a request sent right before EOF arrives whole before the server exits", async () => {
    // The parent closes stdin as soon as the request is out; the answer is still in the pipe's
    // queue when the server sees EOF, and exiting then used to cut it short.
    const payload = "x".repeat(4 * 1024 * 1024);
    const c = new RawChild(["rpc-echo"]);
    await c.write(requestFrame(7, "echo", payload));
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
    const answer = await c.response("7");
    assert.ok(answer, `no whole answer before stdout closed; stderr: ${c.stderr}`);
    assert.deepEqual(answer.value.result, { ok: payload });
  });

  test("executor: a zero-length frame right before EOF is reported and the executor exits 0", async () => {
    const c = new RawChild(["executor"]);
    await c.write(header(0));
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
    assert.deepEqual(stderrLines(c), [
      "relay: executor: skipped a 0-byte frame: the frame payload is empty (a frame carries one JSON message)",
    ]);
  });

  test("executor: empty, invalid UTF-8, non-JSON and wrongly shaped payloads are answered when they name a request, else reported", async () => {
    const c = new RawChild(["executor"]);
    const bad = [
      rawFrame(""),
      rawFrame(Buffer.from([0xff, 0xfe, 0x00])),
      rawFrame("{not json"),
      rawFrame("[1,2,3]"),
      rawFrame('{"type":"notification"}'),
      // These name a request: answered with invalid_message.
      rawFrame(
        Buffer.concat([
          Buffer.from('{"type":"request","id":11,"method":"process/list","params":{"s":"'),
          Buffer.from([0xc3, 0x28]),
          Buffer.from('"}}'),
        ]),
      ),
      rawFrame('{"type":"request","id":12,"method":"process/list","params":{'),
      rawFrame('{"type":"request","id":13,"method":42}'),
    ];
    await c.write(Buffer.concat([...bad, requestFrame(14, "process/list")]));
    await c.response("14");
    for (const id of ["11", "12", "13"]) {
      const a = c.messages.find((m) => m.id === id);
      assert.equal(a?.value.result?.error?.code, "invalid_message", `request ${id}: ${a?.text}`);
    }
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
    const lines = stderrLines(c);
    assert.equal(lines.length, 5, c.stderr);
    assert.ok(
      lines.every((l) => l.startsWith("relay: executor: ")),
      c.stderr,
    );
    assert.match(lines[1]!, /not valid UTF-8/);
    assert.match(lines[2]!, /not JSON/);
    assert.match(lines[3]!, /not a valid message/);
  });

  test("executor: request ids above 2^53-1 are answered with the same id; ids outside u64 are not answered", async () => {
    const c = new RawChild(["executor"]);
    const ids = ["9007199254740993", "18446744073709551615"];
    await c.write(
      Buffer.concat([
        ...ids.map((id) => requestFrame(id, "process/list")),
        requestFrame("18446744073709551616", "process/list"),
        requestFrame(-1, "process/list"),
        requestFrame(1.5, "process/list"),
        requestFrame(7, "process/list"),
      ]),
    );
    await c.response("7");
    // Answered in order: by the answer to 7, the others have theirs or never will.
    for (const id of ids)
      assert.ok(
        c.messages.find((m) => m.id === id)?.value.result?.ok,
        `no answer with id ${id}: ${c.messages.map((m) => m.text).join("\n")}`,
      );
    assert.equal(c.messages.length, 3, "2^64, -1 and 1.5 are not ids: nothing to answer");
    c.end();
    await c.exited;
    assert.equal(stderrLines(c).length, 3, c.stderr);
  });

  test("code-mode-host: a u64 request id comes back exactly, also where the answer repeats it (execute_id)", async () => {
    const c = new RawChild(["code-mode-host"]);
    const id = "18446744073709551615";
    await c.write(
      Buffer.concat([
        requestFrame(1, "codemode/create_session"),
        requestFrame(id, "codemode/execute", { session_id: 1, request: { tool_call_id: "t", source: 'text("x")' } }),
      ]),
    );
    const a = await c.response(id);
    assert.ok(
      a?.text.startsWith(`{"type":"response","id":${id},"result":{"ok":{"cell_id":"1","execute_id":${id},`),
      a?.text ?? c.stderr,
    );
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
  });

  test("executor: an over-limit header ends it with exit 1 and one line on stderr", async () => {
    const c = new RawChild(["executor", "--frame-limit", "1024"]);
    await c.write(Buffer.concat([requestFrame(1, "process/list"), header(1025), Buffer.from("x".repeat(1025))]));
    assert.deepEqual(await c.exited, { code: 1, signal: null });
    assert.ok(
      c.messages.find((m) => m.id === "1"),
      "the request before the bad header was answered",
    );
    assert.deepEqual(stderrLines(c), [
      "relay: executor stopped: protocol error: frame header announces 1025 bytes, over the 1024-byte limit; the connection is closed.",
    ]);
  });

  test("code-mode-host: a stream that ends inside a frame ends it with exit 1 and one line on stderr", async () => {
    const c = new RawChild(["code-mode-host"]);
    await c.write(Buffer.concat([header(100), Buffer.from('{"type":"req')]));
    c.end();
    assert.deepEqual(await c.exited, { code: 1, signal: null });
    assert.deepEqual(stderrLines(c), [
      "relay: code-mode-host stopped: its output stream ended; stream ended inside a frame (12 of 100 payload bytes)",
    ]);
  });
});

describe("framed servers: a request, then end of input", () => {
  test("executor: executor/info and a command sent right before EOF are answered before it exits 0", async () => {
    const c = new RawChild(["executor"]);
    const exec = { command: ["sh", "-c", "echo answered"], cwd: "/", env: {}, yield_time_ms: 5000 };
    await c.write(Buffer.concat([requestFrame(1, "executor/info", {}), requestFrame(2, "process/exec", exec)]));
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
    assert.ok(
      c.messages.find((m) => m.id === "1")?.value.result?.ok,
      `executor/info unanswered: ${c.messages.map((m) => m.text).join("\n")}`,
    );
    const ran = c.messages.find((m) => m.id === "2")?.value.result?.ok as { output?: string } | undefined;
    assert.match(ran?.output ?? "", /answered/, `process/exec unanswered: ${c.messages.map((m) => m.text).join("\n")}`);
  });

  test("code-mode-host: a cell sent right before EOF runs and is answered before it exits 0", async () => {
    const c = new RawChild(["code-mode-host"]);
    await c.write(
      Buffer.concat([
        requestFrame(1, "codemode/create_session"),
        requestFrame(2, "codemode/execute", {
          session_id: 1,
          request: { tool_call_id: "t", source: 'await null; text("after eof")' },
        }),
      ]),
    );
    c.end();
    assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr);
    assert.match(c.messages.find((m) => m.id === "2")?.text ?? c.stderr, /after eof/);
  });
});

describe("the parent reading a child", () => {
  test("a zero-length frame from the child is reported and the connection goes on", async () => {
    const errors: string[] = [];
    const line = `printf '\\000\\000\\000\\000'; exec ${joinCommandLine(relayArgv())} rpc-echo`;
    const c = spawnPeer(["sh", "-c", line], { name: "echo-child", onProtocolError: (m) => errors.push(m) });
    assert.ok("ok" in c, JSON.stringify(c));
    assert.deepEqual(await c.ok.peer.call(EchoMethod, { after: "empty frame" }), { ok: { after: "empty frame" } });
    assert.deepEqual(errors, [
      "echo-child: skipped a 0-byte frame: the frame payload is empty (a frame carries one JSON message)",
    ]);
    assert.equal((await c.ok.shutdown()).code, 0);
  });

  test("a malformed answer from the child settles the pending call with an error", async () => {
    // The child answers request 1 with a result that is not a Result value, then echoes normally.
    const bad = JSON.stringify({ type: "response", id: 1, result: { value: 1 } });
    const frameHex = [...rawFrame(bad)].map((b) => `\\${b.toString(8).padStart(3, "0")}`).join("");
    const line = `head -c ${4 + Buffer.byteLength(JSON.stringify({ type: "request", id: 1, method: "echo", params: 1 }))} >/dev/null; printf '${frameHex}'; exec ${joinCommandLine(relayArgv())} rpc-echo`;
    const c = spawnPeer(["sh", "-c", line], { name: "liar" });
    assert.ok("ok" in c, JSON.stringify(c));
    const r = await c.ok.peer.call(EchoMethod, 1);
    assert.ok("error" in r, JSON.stringify(r));
    assert.equal(r.error.code, "invalid_message");
    assert.match(r.error.message, /^the response to echo was malformed: not a valid message/);
    assert.deepEqual(await c.ok.peer.call(EchoMethod, 2), { ok: 2 });
    await c.ok.shutdown();
  });
});
