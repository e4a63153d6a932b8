/** The host at the byte level: frame order, bad frames, an oversized header. */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { encodeFrame, FrameDecoder } from "../../src/protocol/frame.ts";
import { relayArgv } from "../support/self.ts";

interface Frame {
  type: string;
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: { ok?: Record<string, unknown>; error?: { code: string; message: string } };
}

class RawHost {
  readonly child: ChildProcessWithoutNullStreams;
  private readonly frames: Frame[] = [];
  private readonly decoder = new FrameDecoder();
  private wake: (() => void) | undefined;
  /** Set once the host has exited and its output is closed: no frame can come any more. */
  private closed: number | null | undefined;
  stderr = "";
  /** Reads of the host's stdout so far (how many times a client would have woken). */
  chunks = 0;
  readonly exited: Promise<number | null>;

  constructor() {
    const [cmd, ...pre] = relayArgv();
    this.child = spawn(cmd!, [...pre, "code-mode-host"], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout.on("data", (chunk: Buffer) => {
      this.chunks++;
      for (const f of this.decoder.push(chunk)) if (f.kind === "frame") this.frames.push(f.value as Frame);
      this.wake?.();
    });
    this.child.stderr.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.once("close", (code) => {
      this.closed = code;
      this.wake?.();
    });
  }

  /** Writes one frame; resolves once it is in the host's stdin pipe (or the write failed: the host's exit tells why). */
  send(value: unknown): Promise<void> {
    const f = encodeFrame(value);
    assert.ok("ok" in f);
    return new Promise((resolve) => this.child.stdin.write(f.ok, () => resolve()));
  }

  raw(bytes: Buffer): void {
    this.child.stdin.write(bytes);
  }

  request(id: number, method: string, params: unknown): Promise<void> {
    return this.send({ type: "request", id, method, params });
  }

  /** The next frame the host wrote (answering delegate requests is up to the test); woken by its output or its exit. */
  async next(): Promise<Frame> {
    while (this.frames.length === 0) {
      if (this.closed !== undefined)
        throw new Error(`the host exited (${this.closed}) without writing another frame; stderr: ${this.stderr}`);
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.frames.shift()!;
  }
}

const label = (f: Frame) => (f.type === "response" ? `response ${f.id}` : `${f.type} ${f.method}`);

describe("code-mode host frames", () => {
  test("execute: an answer that carries a quick result, else initial_response and cell_closed later; shutdown closes open cells in order", async () => {
    const h = new RawHost();
    h.request(1, "codemode/create_session", {});
    assert.deepEqual((await h.next()).result, { ok: { session_id: 1 } });

    // Ends at once: the answer carries the result and says the cell is closed; nothing follows.
    h.request(2, "codemode/execute", { session_id: 1, request: { tool_call_id: "call-1", source: 'text("hi")' } });
    const answer = await h.next();
    assert.equal(label(answer), "response 2");
    const hi = { Result: { cell_id: "1", content_items: [{ type: "input_text", text: "hi" }], error_text: null } };
    assert.deepEqual(answer.result, { ok: { cell_id: "1", execute_id: 2, initial: hi, closed: true } });
    h.request(6, "codemode/hello", {});
    assert.equal(label(await h.next()), "response 6", "no initial_response or cell_closed followed the answer");

    // Ends after a timer: ExecutionStarted, then initial_response, then cell_closed.
    h.request(7, "codemode/execute", {
      session_id: 1,
      request: { tool_call_id: "call-0", source: 'await new Promise((r) => setTimeout(r, 10)); text("late")' },
    });
    const order = [await h.next(), await h.next(), await h.next()];
    assert.deepEqual(order.map(label), [
      "response 7",
      "notification codemode/initial_response",
      "notification codemode/cell_closed",
    ]);
    assert.deepEqual(order[0]!.result, { ok: { cell_id: "2", execute_id: 7 } });
    const late = { Result: { cell_id: "2", content_items: [{ type: "input_text", text: "late" }], error_text: null } };
    assert.deepEqual(order[1]!.params, { id: 7, session_id: 1, cell_id: "2", response: { ok: late } });
    assert.deepEqual(order[2]!.params, { session_id: 1, cell_id: "2" });

    // Two cells that keep running, and a notification delegate request in between.
    h.request(3, "codemode/execute", {
      session_id: 1,
      request: {
        tool_call_id: "call-2",
        source: 'notify("notice"); await new Promise(() => setTimeout(() => {}, 60000))',
        yield_time_ms: 20,
      },
    });
    const seen: Frame[] = [];
    while (seen.filter((f) => f.method === "codemode/initial_response").length === 0) {
      const f = await h.next();
      if (f.type === "request" && f.method === "codemode/notify") {
        assert.deepEqual(f.params, { session_id: 1, call_id: "call-2", cell_id: "3", text: "notice" });
        h.send({ type: "response", id: f.id, result: { ok: { delivered: true } } });
      }
      seen.push(f);
    }
    assert.equal(label(seen[0]!), "response 3");
    assert.ok(
      seen.some((f) => f.method === "codemode/notify"),
      "the notification was sent as a delegate request",
    );
    h.request(4, "codemode/execute", {
      session_id: 1,
      request: {
        tool_call_id: "call-3",
        source: "await new Promise(() => setTimeout(() => {}, 60000))",
        yield_time_ms: 20,
      },
    });
    assert.equal(label(await h.next()), "response 4");
    assert.equal((await h.next()).method, "codemode/initial_response");

    h.request(5, "codemode/shutdown_session", { session_id: 1 });
    const tail = [await h.next(), await h.next(), await h.next()];
    assert.deepEqual(
      tail.map((f) => (f.type === "response" ? `response ${f.id}` : `closed ${f.params?.cell_id}`)).sort(),
      ["closed 3", "closed 4", "response 5"],
    );
    assert.deepEqual(
      tail.filter((f) => f.type === "notification").map((f) => f.params?.cell_id),
      ["3", "4"],
      "cells close in order",
    );

    h.child.stdin.end();
    assert.equal(await h.exited, 0, h.stderr);
  });

  test("invoke_tool delegate requests: an answer resumes the script, terminate cancels an open one", async () => {
    const h = new RawHost();
    h.request(1, "codemode/create_session", {});
    await h.next();
    const tools = [{ name: "echo", description: "echoes", kind: "function" }];
    const source =
      'const r = await tools.echo({value: "persisted"}); text(r.value); await tools.echo({}); text("never")';
    const before = h.chunks;
    h.request(2, "codemode/execute", {
      session_id: 1,
      request: { tool_call_id: "call-1", enabled_tools: tools, source, yield_time_ms: 60000 },
    });
    assert.equal(label(await h.next()), "response 2", "ExecutionStarted goes out before the script's first tool call");
    const call = await h.next();
    assert.equal(h.chunks - before, 1, "and both leave in one write");
    assert.equal(call.method, "codemode/invoke_tool");
    assert.deepEqual(call.params, {
      session_id: 1,
      cell_id: "1",
      call_id: "call-1",
      runtime_tool_call_id: "tool-1",
      tool_name: "echo",
      tool_kind: "function",
      input: { value: "persisted" },
    });
    h.send({ type: "response", id: call.id, result: { ok: { result: { value: "output" } } } });
    const second = await h.next();
    assert.equal(second.method, "codemode/invoke_tool");
    assert.equal(second.params?.runtime_tool_call_id, "tool-2");

    h.request(3, "codemode/terminate", { session_id: 1, cell_id: "1" });
    const after = [await h.next(), await h.next(), await h.next()];
    assert.deepEqual(after[0], { type: "cancel", id: second.id }, "the open delegate request is cancelled first");
    const labels = after.slice(1).map(label);
    assert.ok(
      labels.includes("response 3") && labels.includes("notification codemode/initial_response"),
      labels.join(", "),
    );
    const initial = after.find((f) => f.method === "codemode/initial_response")!;
    assert.deepEqual(initial.params?.response, {
      ok: { Terminated: { cell_id: "1", content_items: [{ type: "input_text", text: "output" }] } },
    });
    const term = after.find((f) => f.type === "response")!;
    assert.deepEqual(term.result, {
      ok: {
        outcome: {
          LiveCell: { Terminated: { cell_id: "1", content_items: [{ type: "input_text", text: "output" }] } },
        },
      },
    });
    assert.equal((await h.next()).method, "codemode/cell_closed");
    // A late answer to the cancelled request is ignored.
    h.send({ type: "response", id: second.id, result: { ok: { result: null } } });
    h.request(4, "codemode/hello", {});
    assert.equal(label(await h.next()), "response 4");
    h.child.stdin.end();
    assert.equal(await h.exited, 0, h.stderr);
  });

  test("a busy loop: ExecutionStarted still arrives at once; the terminate marker in control_dir stops it", async () => {
    const h = new RawHost();
    h.request(1, "codemode/hello", {});
    const controlDir = (await h.next()).result?.ok?.control_dir as string;
    assert.ok(controlDir);
    h.request(2, "codemode/create_session", { limits: { cpu_limit_ms: 60_000 } });
    await h.next();
    h.request(3, "codemode/execute", {
      session_id: 1,
      request: { tool_call_id: "c", source: 'text("spin"); notify("looping"); while (true) {}', yield_time_ms: 60_000 },
    });
    // Answered while the loop (which never ends by itself) holds the thread.
    assert.deepEqual((await h.next()).result, { ok: { cell_id: "1", execute_id: 3 } });
    assert.equal((await h.next()).method, "codemode/notify", "the loop has started");
    // The terminate request is in the host's pipe (unread: the loop holds the thread) before the marker appears.
    await h.request(4, "codemode/terminate", { session_id: 1, cell_id: "1" });
    writeFileSync(path.join(controlDir, "1-1"), "");
    const frames: Frame[] = [];
    while (!frames.some((f) => f.method === "codemode/cell_closed") || !frames.some((f) => f.type === "response"))
      frames.push(await h.next());
    const terminated = { Terminated: { cell_id: "1", content_items: [{ type: "input_text", text: "spin" }] } };
    assert.deepEqual(frames.find((f) => f.type === "response")?.result, { ok: { outcome: { LiveCell: terminated } } });
    assert.deepEqual(frames.find((f) => f.method === "codemode/initial_response")?.params?.response, {
      ok: terminated,
    });
    // Terminated, not a CPU-limit Result: the marker stopped it, not its 60 s budget.
    assert.equal(existsSync(path.join(controlDir, "1-1")), false, "the terminate request cleared the marker");
    h.child.stdin.end();
    assert.equal(await h.exited, 0, h.stderr);
  });

  test("a script that finishes or yields at once is answered with one frame in one chunk", async () => {
    const h = new RawHost();
    h.request(1, "codemode/create_session", {});
    await h.next();
    let before = h.chunks;
    h.request(2, "codemode/execute", { session_id: 1, request: { tool_call_id: "c", source: 'text("ok")' } });
    const answer = await h.next();
    assert.equal(label(answer), "response 2");
    assert.deepEqual(answer.result?.ok?.initial, {
      Result: { cell_id: "1", content_items: [{ type: "input_text", text: "ok" }], error_text: null },
    });
    assert.equal(answer.result?.ok?.closed, true);
    assert.equal(h.chunks - before, 1, "the client wakes once per command");
    // A yield at once: the answer carries the Yielded response; the cell stays open.
    before = h.chunks;
    h.request(3, "codemode/execute", {
      session_id: 1,
      request: {
        tool_call_id: "c",
        source: 'text("a"); yield_control(); await new Promise((r) => setTimeout(r, 10)); text("b")',
      },
    });
    const yielded = await h.next();
    assert.deepEqual(yielded.result, {
      ok: {
        cell_id: "2",
        execute_id: 3,
        initial: { Yielded: { cell_id: "2", content_items: [{ type: "input_text", text: "a" }] } },
      },
    });
    assert.equal(h.chunks - before, 1);
    h.request(4, "codemode/wait", { session_id: 1, request: { cell_id: "2", yield_time_ms: 5000 } });
    const rest = [await h.next(), await h.next()];
    assert.deepEqual(
      rest.map(label),
      ["response 4", "notification codemode/cell_closed"],
      "cell_closed follows once the result is collected",
    );
    assert.deepEqual(rest[0]!.result, {
      ok: {
        outcome: {
          LiveCell: { Result: { cell_id: "2", content_items: [{ type: "input_text", text: "b" }], error_text: null } },
        },
      },
    });
    h.child.stdin.end();
    assert.equal(await h.exited, 0, h.stderr);
  });

  test("a busy script cannot hold back frames: a notify after 50 ms of spinning arrives while it still spins", async () => {
    const h = new RawHost();
    h.request(1, "codemode/hello", {});
    const controlDir = (await h.next()).result?.ok?.control_dir as string;
    h.request(2, "codemode/create_session", { limits: { cpu_limit_ms: 60_000 } });
    await h.next();
    const source = 'const t = Date.now(); while (Date.now() - t < 50) {} notify("midway"); while (true) {}';
    h.request(3, "codemode/execute", { session_id: 1, request: { tool_call_id: "c", source, yield_time_ms: 60_000 } });
    assert.equal(label(await h.next()), "response 3");
    const note = await h.next();
    assert.equal(note.method, "codemode/notify");
    assert.equal(note.params?.text, "midway");
    writeFileSync(path.join(controlDir, "1-1"), "");
    const frames: Frame[] = [];
    while (!frames.some((f) => f.method === "codemode/cell_closed")) frames.push(await h.next());
    assert.ok(
      frames.some(
        (f) =>
          f.method === "codemode/initial_response" &&
          "Terminated" in ((f.params?.response as { ok?: object } | undefined)?.ok ?? {}),
      ),
    );
    h.child.stdin.end();
    assert.equal(await h.exited, 0, h.stderr);
  });

  test("bad frames are skipped or answered; the host keeps serving; an oversized header ends it with exit 1", async () => {
    const h = new RawHost();
    const garbage = Buffer.from("{not json", "utf8");
    const header = Buffer.alloc(4);
    header.writeUInt32BE(garbage.length, 0);
    h.raw(Buffer.concat([header, garbage]));
    h.send({ type: "request", id: 7 });
    const invalid = await h.next();
    assert.equal(invalid.id, 7);
    assert.equal(invalid.result?.error?.code, "invalid_message");
    h.send({ type: "response", id: 999, result: { ok: null } });
    h.send({ hello: "world" });
    h.request(8, "codemode/nope", {});
    const unknown = await h.next();
    assert.equal(unknown.id, 8);
    assert.equal(unknown.result?.error?.code, "method_not_found");
    h.request(9, "codemode/execute", { session_id: 12, request: { tool_call_id: "x", source: "1" } });
    assert.deepEqual((await h.next()).result, {
      error: { code: "unknown_session", message: "unknown code-mode session 12" },
    });
    h.request(10, "codemode/wait", { session_id: 1, request: { cell_id: "", yield_time_ms: -1 } });
    assert.equal((await h.next()).result?.error?.code, "invalid_params");
    h.request(11, "codemode/hello", {});
    assert.ok((await h.next()).result?.ok, "still serving after bad frames");

    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(64 * 1024 * 1024, 0);
    h.raw(huge);
    assert.equal(await h.exited, 1);
    assert.match(h.stderr, /over the 16777216-byte limit/);
  });
});
