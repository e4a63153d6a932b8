import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { InProcessProvider } from "../../src/codemode/in-process-provider.ts";
import { CodeModeMethods, CodeModeNotifications, type RuntimeResponse } from "../../src/contracts/code-mode.ts";
import type { CodeModeCallbacks, CodeModeProvider } from "../../src/contracts/code-mode-provider.ts";
import { type ChildPeer, spawnSelf } from "../../src/protocol/child.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";
import { useTestRelay } from "../support/self.ts";
import { deferred, Inbox, until } from "../support/wait.ts";

const texts = (r: RuntimeResponse) =>
  ("Yielded" in r ? r.Yielded : "Terminated" in r ? r.Terminated : r.Result).content_items.map((i) =>
    i.type === "input_text" ? i.text : i.image_url,
  );
const echoTools = [
  { name: "echo", description: "echo", kind: "function" as const },
  { name: "fail-tool", description: "fails", kind: "function" as const },
];
const callbacks = (log: unknown[] = []): CodeModeCallbacks => ({
  async invokeTool(call) {
    log.push(call);
    if (call.tool_name === "fail-tool") return { error: { code: "tool_failed", message: "the tool broke" } };
    return ok({ value: "output", input: call.input });
  },
});

describe("code-mode host: raw protocol", () => {
  let host: ChildPeer;
  const initial = new Inbox<unknown>();
  before(() => {
    useTestRelay();
    const s = spawnSelf("code-mode-host");
    assert.ok("ok" in s);
    host = s.ok;
    host.peer.onNotification(CodeModeNotifications.initialResponse, (n) => initial.push(n));
    host.peer.handle(CodeModeMethods.invokeTool, (c) => ok({ result: { got: c.input, id: c.runtime_tool_call_id } }));
    host.peer.handle(CodeModeMethods.notify, () => ok({ delivered: true as const }));
  });
  after(async () => {
    const exit = await host.shutdown();
    assert.equal(exit.code, 0, host.stderr);
  });

  test("every op of the contract, in order", async () => {
    const created = await host.peer.call(CodeModeMethods.createSession, {});
    assert.ok("ok" in created, JSON.stringify(created));
    const sid = created.ok.session_id;
    const started = await host.peer.call(CodeModeMethods.execute, {
      session_id: sid,
      request: {
        tool_call_id: "call-1",
        enabled_tools: [{ name: "echo", description: "", kind: "function" }],
        source:
          'text("hello"); yield_control(); const r = await tools.echo({a: 1}); text(r.id); await new Promise((res) => setTimeout(res, 50)); text("world")',
      },
    });
    assert.ok("ok" in started, JSON.stringify(started));
    assert.equal(started.ok.cell_id, "1");
    // The script yielded before the answer left, so the answer carries that first response.
    assert.deepEqual(started.ok.initial, {
      Yielded: { cell_id: "1", content_items: [{ type: "input_text", text: "hello" }] },
    });
    assert.equal(started.ok.closed, undefined);
    const waited = await host.peer.call(CodeModeMethods.wait, {
      session_id: sid,
      request: { cell_id: "1", yield_time_ms: 5000 },
    });
    assert.ok("ok" in waited);
    assert.deepEqual(waited.ok.outcome, {
      LiveCell: {
        Result: {
          cell_id: "1",
          content_items: [
            { type: "input_text", text: "tool-1" },
            { type: "input_text", text: "world" },
          ],
          error_text: null,
        },
      },
    });
    const gone = await host.peer.call(CodeModeMethods.wait, {
      session_id: sid,
      request: { cell_id: "1", yield_time_ms: 10 },
    });
    assert.ok("ok" in gone);
    assert.deepEqual(gone.ok.outcome, {
      MissingCell: { Result: { cell_id: "1", content_items: [], error_text: "exec cell 1 not found" } },
    });

    const loop = await host.peer.call(CodeModeMethods.execute, {
      session_id: sid,
      request: {
        tool_call_id: "call-2",
        source: 'text("spin"); await new Promise(() => setTimeout(() => {}, 60000))',
        yield_time_ms: 20,
      },
    });
    assert.ok("ok" in loop);
    assert.equal(loop.ok.initial, undefined, "still running when answered");
    // Its first response comes later, as a notification carrying the execute request's id.
    const first = (await until(initial.next(), "the cell's initial_response notification")) as {
      id: number;
      response: { ok: RuntimeResponse };
    };
    assert.equal(first.id, loop.ok.execute_id);
    assert.deepEqual(first.response.ok, {
      Yielded: { cell_id: "2", content_items: [{ type: "input_text", text: "spin" }] },
    });
    const term = await host.peer.call(CodeModeMethods.terminate, { session_id: sid, cell_id: loop.ok.cell_id });
    assert.ok("ok" in term);
    assert.ok(
      "LiveCell" in term.ok.outcome && "Terminated" in term.ok.outcome.LiveCell,
      JSON.stringify(term.ok.outcome),
    );

    const shut = await host.peer.call(CodeModeMethods.shutdownSession, { session_id: sid });
    assert.deepEqual(shut, { ok: { shutdown: true } });
    const after = await host.peer.call(CodeModeMethods.execute, {
      session_id: sid,
      request: { tool_call_id: "x", source: "1" },
    });
    assert.ok("error" in after);
    assert.equal(after.error.code, "unknown_session");
    assert.equal(after.error.message, `unknown code-mode session ${sid}`);
  });

  test("unknown op and bad params are answered with errors, the host keeps serving", async () => {
    const unknown = await host.peer.call({ ...CodeModeMethods.hello, name: "codemode/frobnicate" }, {});
    assert.ok("error" in unknown);
    assert.equal(unknown.error.code, "method_not_found");
    const bad = await host.peer.call(
      { ...CodeModeMethods.execute, params: CodeModeMethods.hello.params } as never,
      { session_id: "one" } as never,
    );
    assert.ok("error" in bad);
    assert.equal((bad as { error: { code: string } }).error.code, "invalid_params");
    const hello = await host.peer.call(CodeModeMethods.hello, {});
    assert.ok("ok" in hello);
  });
});

for (const kind of ["host", "in-process"] as const) {
  describe(`code-mode provider (${kind})`, () => {
    let provider: CodeModeProvider;
    before(() => {
      useTestRelay();
      provider = kind === "host" ? new HostProvider() : new InProcessProvider();
    });
    after(async () => provider.close());

    const open = async (cb = callbacks(), limits?: { memory_limit_bytes?: number; cpu_limit_ms?: number }) => {
      const s = await provider.openSession(cb, limits);
      assert.ok("ok" in s, JSON.stringify(s));
      return s.ok;
    };

    test("nested tool calls, including a failing one", async () => {
      const log: unknown[] = [];
      const s = await open(callbacks(log));
      const r = await s.execute({
        tool_call_id: "call-7",
        enabled_tools: echoTools,
        source:
          'const a = await tools.echo({value: "persisted"}); text(a.value); try { await tools.fail_tool({}) } catch (e) { text("caught " + typeof e + ": " + e) } await tools.fail_tool()',
      });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.deepEqual(texts(r.ok), ["output", "caught string: the tool broke"]);
      assert.ok("Result" in r.ok);
      assert.equal(r.ok.Result.error_text, "the tool broke");
      assert.deepEqual(log[0], {
        cell_id: "1",
        call_id: "call-7",
        runtime_tool_call_id: "tool-1",
        tool_name: "echo",
        tool_kind: "function",
        input: { value: "persisted" },
      });
      assert.equal((log[2] as { runtime_tool_call_id: string }).runtime_tool_call_id, "tool-3");
      const bad = await s.execute({ tool_call_id: "c", enabled_tools: echoTools, source: "await tools.echo(5)" });
      assert.ok("ok" in bad && "Result" in bad.ok);
      assert.match(bad.ok.Result.error_text ?? "", /tool `echo` expects a JSON object for arguments/);
      await s.shutdown();
    });

    test("store/load: shared by a session's cells, isolated across sessions, discarded on terminate", async () => {
      const a = await open();
      const b = await open();
      const w = await a.execute({ tool_call_id: "1", source: 'store("k", {n: 1}); text(String(load("k").n))' });
      assert.ok("ok" in w);
      assert.deepEqual(texts(w.ok), ["1"]);
      const r = await a.execute({ tool_call_id: "2", source: 'text(JSON.stringify(load("k")))' });
      assert.ok("ok" in r);
      assert.deepEqual(texts(r.ok), ['{"n":1}']);
      const other = await b.execute({ tool_call_id: "3", source: 'text(String(load("k")))' });
      assert.ok("ok" in other);
      assert.deepEqual(texts(other.ok), ["undefined"]);
      const bad = await a.execute({ tool_call_id: "4", source: 'store("f", () => 1)' });
      assert.ok("ok" in bad && "Result" in bad.ok);
      assert.match(
        bad.ok.Result.error_text ?? "",
        /Unable to store "f"\. Only plain serializable objects can be stored\./,
      );

      const t = await a.execute({
        tool_call_id: "5",
        source: 'store("k", {n: 2}); yield_control(); await new Promise((r) => setTimeout(r, 60000))',
      });
      assert.ok("ok" in t && "Yielded" in t.ok, JSON.stringify(t));
      const cell = t.ok.Yielded.cell_id;
      const term = await a.terminate(cell);
      assert.ok("ok" in term && "LiveCell" in term.ok && "Terminated" in term.ok.LiveCell, JSON.stringify(term));
      const again = await a.execute({ tool_call_id: "6", source: 'text(String(load("k").n))' });
      assert.ok("ok" in again);
      assert.deepEqual(texts(again.ok), ["1"], "the terminated cell's write was discarded");
      await a.shutdown();
      await b.shutdown();
    });

    test("terminate cancels an outstanding nested tool call", async () => {
      const aborted = deferred();
      const s = await open({
        invokeTool: (_call, signal) =>
          new Promise((resolve) => {
            signal.addEventListener("abort", () => {
              aborted.resolve();
              resolve(ok("late"));
            });
          }),
      });
      const r = await s.execute({
        tool_call_id: "1",
        enabled_tools: echoTools,
        source: "text('a'); await tools.echo({})",
        yield_time_ms: 50,
      });
      assert.ok("ok" in r && "Yielded" in r.ok, JSON.stringify(r));
      const t = await s.terminate(r.ok.Yielded.cell_id);
      assert.ok("ok" in t);
      await until(aborted.promise, "the delegate to see the cancellation");
      await s.shutdown();
    });

    test("aborting execute's signal terminates the cell", async () => {
      const s = await open();
      const ctrl = new AbortController();
      // The user aborts while the cell runs; not a wait: any delay ends the same way (terminated, "x" kept).
      setTimeout(() => ctrl.abort(), 100);
      const r = await s.execute(
        {
          tool_call_id: "1",
          source: 'text("x"); await new Promise((res) => setTimeout(res, 60000))',
          yield_time_ms: 60000,
        },
        ctrl.signal,
      );
      assert.ok("ok" in r && "Terminated" in r.ok, JSON.stringify(r));
      assert.deepEqual(texts(r.ok), ["x"]);
      await s.shutdown();
    });

    test("globals: exit, timers, no console/imports, notify", async () => {
      const notes: string[] = [];
      const noted = deferred();
      const s = await open({
        ...callbacks(),
        notify: (n) => {
          notes.push(n.text);
          noted.resolve();
        },
      });
      const r = await s.execute({
        tool_call_id: "1",
        source:
          'text("before"); notify("notice"); setTimeout(() => text("never"), 60000); text(typeof console + " " + typeof fetch + " " + typeof require); exit(); text("after")',
      });
      assert.ok("ok" in r && "Result" in r.ok);
      assert.deepEqual(texts(r.ok), ["before", "undefined undefined undefined"]);
      assert.equal(r.ok.Result.error_text, null);
      const imp = await s.execute({ tool_call_id: "2", source: 'import fs from "node:fs"; text("x")' });
      assert.ok("ok" in imp && "Result" in imp.ok);
      assert.match(imp.ok.Result.error_text ?? "", /Unsupported import in exec: node:fs/);
      await until(noted.promise, "the notification to reach the client");
      assert.deepEqual(notes, ["notice"]);
      await s.shutdown();
    });

    test("globals behave like plain JS: rendering, error types, rejections, frozen tools, tamper-proof built-ins", async () => {
      const log: unknown[] = [];
      const s = await open(callbacks(log));
      const tools = [
        ...echoTools,
        { name: "raw patch", description: "freeform", kind: "freeform" as const },
        { name: "9lives", description: "", kind: "function" as const },
      ];
      const source = `
        const cyclic = {}; cyclic.self = cyclic;
        text({a: [1, "x"]}); text(undefined); text(cyclic); text(Symbol("s")); text(() => 1); text(42);
        const kind = (f) => { try { f(); return "ok" } catch (e) { return (e instanceof TypeError ? "TypeError" : e instanceof RangeError ? "RangeError" : typeof e) + ": " + (e.message ?? e) } };
        text(kind(() => notify("   ")));
        text(kind(() => store("k", undefined)));
        text(kind(() => store("f", () => 1)));
        text(kind(() => setTimeout("code", 1)));
        text(kind(() => text({ toJSON() { throw new Error("no") }, toString() { throw new SyntaxError("nope") } })));
        store("obj", {n: 1}); const a = load("obj"); a.n = 2; text(String(load("obj").n) + " " + String(load("missing")));
        const t1 = setTimeout(() => text("fired"), NaN); const t2 = setTimeout(() => text("cleared"), 0); clearTimeout(t2); clearTimeout("junk"); clearTimeout(-1);
        text(String(t2 - t1));
        const p = tools.echo([1]); text(String(p instanceof Promise)); p.catch(() => {});
        for (const [label, call] of [["array", () => tools.echo([1])], ["null", () => tools.echo(null)], ["freeform", () => tools.raw_patch({})], ["cyclic", () => tools.echo(cyclic)]]) {
          try { await call(); text(label + " resolved") } catch (e) { text(label + " " + e.name + ": " + e.message) }
        }
        const r = await tools.echo(); text(JSON.stringify(r));
        const f = await tools.raw_patch("*** Begin"); text(JSON.stringify(f.input));
        await tools._lives({q: 1});
        text(kind(() => { text = 1 }));
        text(String(Object.isFrozen(tools)) + " " + String(Object.isFrozen(ALL_TOOLS)) + " " + JSON.stringify(ALL_TOOLS === undefined ? null : Object.keys(tools)));
        text(ALL_TOOLS.map((t) => t.name + "=" + t.description).join(","));
        text(String(Object.getOwnPropertyDescriptor(globalThis, "text").writable) + " " + String(Object.keys(globalThis).includes("text")));
        JSON.stringify = () => "hacked"; String = () => "hacked"; JSON.parse = () => "hacked";
        text({still: "json"}); store("after", [1]); text("" + load("after")[0]);
        await new Promise((res) => setTimeout(res, 5));
      `;
      const r = await s.execute({ tool_call_id: "g", enabled_tools: tools, source });
      assert.ok("ok" in r && "Result" in r.ok, JSON.stringify(r));
      assert.equal(r.ok.Result.error_text, null);
      // The NaN-delay timer fires whenever the script next waits (over IPC, during a tool call).
      const all = texts(r.ok);
      assert.equal(all.filter((t) => t === "fired").length, 1, "the NaN-delay timer fired once, the cleared one never");
      assert.ok(!all.includes("cleared"));
      const out = all.filter((t) => t !== "fired");
      assert.deepEqual(out.slice(0, 6), [
        '{"a":[1,"x"]}',
        "undefined",
        "[object Object]",
        "Symbol(s)",
        "() => 1",
        "42",
      ]);
      assert.deepEqual(out.slice(6, 11), [
        "TypeError: notify expects non-empty text",
        'TypeError: Unable to store "k". Only plain serializable objects can be stored.',
        'TypeError: Unable to store "f". Only plain serializable objects can be stored.',
        "TypeError: setTimeout expects a function callback",
        "object: nope",
      ]);
      assert.equal(out[11], "1 undefined", "load returns a fresh copy; a missing key is undefined");
      assert.equal(out[12], "1", "timer ids count up");
      assert.equal(out[13], "true", "a tool call with bad arguments still returns a promise");
      assert.deepEqual(out.slice(14, 18), [
        "array TypeError: tool `echo` expects a JSON object for arguments",
        "null TypeError: tool `echo` expects a JSON object for arguments",
        "freeform TypeError: tool `raw patch` expects a string input",
        "cyclic TypeError: tool `echo` arguments are not JSON-serialisable",
      ]);
      assert.equal(out[18], '{"value":"output","input":{}}', "no arguments means {}; the result arrives parsed");
      assert.equal(out[19], '"*** Begin"', "a freeform tool receives the string itself");
      assert.match(out[20] ?? "", /^TypeError: /, "globals are read-only (modules are strict)");
      assert.equal(out[21], 'true true ["echo","fail_tool","raw_patch","_lives"]');
      assert.equal(out[22], "echo=echo,fail_tool=fails,raw_patch=freeform,_lives=");
      assert.equal(out[23], "false false", "non-writable, non-enumerable");
      assert.deepEqual(out.slice(24), ['{"still":"json"}', "1"], "overwritten built-ins do not reach the globals");
      const calls = log as Array<{ tool_name: string; tool_kind: string; input: unknown }>;
      assert.deepEqual(
        calls.map((c) => [c.tool_name, c.tool_kind, c.input]),
        [
          ["echo", "function", {}],
          ["raw patch", "freeform", "*** Begin"],
          ["9lives", "function", { q: 1 }],
        ],
        "only well-formed calls reached the client",
      );
      await s.shutdown();
    });

    test("caps on what a script makes the host hold: output, timers, stored bytes", async () => {
      const closed: string[] = [];
      const allClosed = deferred();
      const s = await open({
        ...callbacks(),
        cellClosed: (id) => {
          closed.push(id);
          if (closed.length === 4) allClosed.resolve();
        },
      });
      // 24 MiB of output would not fit a 16 MiB frame: the cell keeps 1 MiB and says what it dropped.
      const out = await s.execute({
        tool_call_id: "1",
        source: 'const mb = "x".repeat(1 << 20); for (let i = 0; i < 24; i++) text(mb); text("end")',
      });
      assert.ok("ok" in out && "Result" in out.ok, JSON.stringify(out).slice(0, 300));
      assert.equal(out.ok.Result.error_text, null);
      const items = texts(out.ok);
      assert.ok(items.join("").length < (1 << 20) + 200, `kept ${items.join("").length} characters`);
      assert.match(
        items.at(-1)!,
        /^\[\d+ more characters of output were dropped: a cell keeps at most 1048576 between yields\]$/,
      );

      const timers = await s.execute({
        tool_call_id: "2",
        source: "for (let i = 0; i < 20000; i++) setTimeout(() => {}, 1e9)",
      });
      assert.ok("ok" in timers && "Result" in timers.ok);
      assert.match(timers.ok.Result.error_text ?? "", /RangeError: too many pending timers \(at most 10000\)/);

      const big = await s.execute({
        tool_call_id: "3",
        source:
          'const v = "y".repeat(1 << 20); let n = 0; try { for (; n < 20; n++) store("k" + n, v) } catch (e) { text(n + " " + e.message) }',
      });
      assert.ok("ok" in big && "Result" in big.ok);
      assert.match(
        texts(big.ok)[0] ?? "",
        /^7 Unable to store "k7": this session's stored values would exceed 16777216 bytes\.$/,
      );
      const kept = await s.execute({ tool_call_id: "4", source: 'text(String(load("k6").length))' });
      assert.ok("ok" in kept);
      assert.deepEqual(texts(kept.ok), ["1048576"], "the writes before the failure were committed");
      await until(allClosed.promise, "cell_closed for all four cells");
      // Cells close independently (clearing cell 2's 10000 timers takes a while): every one, in any order.
      assert.deepEqual([...closed].sort(), ["1", "2", "3", "4"], "cell_closed reached the client for every cell");
      await s.shutdown();
    });

    test("limits: an infinite loop and a huge allocation end in clean errors", async () => {
      const s = await open(callbacks(), { cpu_limit_ms: 300, memory_limit_bytes: 16 * 1024 * 1024 });
      const loop = await s.execute({ tool_call_id: "1", source: "while (true) {}" });
      assert.ok("ok" in loop && "Result" in loop.ok, JSON.stringify(loop));
      assert.match(loop.ok.Result.error_text ?? "", /exceeded its CPU time limit of 300 ms/);
      const mem = await s.execute({
        tool_call_id: "2",
        source:
          "const keep = new Uint8Array(8 << 20); const huge = new Uint8Array(1 << 30); text(String(keep.length + huge.length))",
      });
      assert.ok("ok" in mem && "Result" in mem.ok, JSON.stringify(mem));
      assert.match(mem.ok.Result.error_text ?? "", /out of memory/);
      const proto = await s.execute({
        tool_call_id: "3",
        source:
          'Object.defineProperty(Object.prototype, "then", {get() { throw 1 }}); JSON.stringify = null; text("still")',
      });
      assert.ok("ok" in proto, JSON.stringify(proto));
      const fine = await s.execute({
        tool_call_id: "4",
        source: "function f() { return f() } try { f() } catch (e) { text(String(e)) }",
      });
      assert.ok("ok" in fine);
      assert.match(texts(fine.ok)[0] ?? "", /stack overflow/);
      const deep = await s.execute({
        tool_call_id: "5",
        source: "const o = {}; o.toString = () => String(o); String(o)",
      });
      assert.ok("ok" in deep && "Result" in deep.ok && deep.ok.Result.error_text !== null, JSON.stringify(deep));
      const after = await s.execute({ tool_call_id: "6", source: 'text("after")' });
      assert.ok("ok" in after);
      assert.deepEqual(texts(after.ok), ["after"], "the runtime keeps serving after hostile cells");
      await s.shutdown();
    });
  });
}

describe("code-mode host: terminate a CPU-bound cell", () => {
  test("terminate stops a busy loop long before its CPU budget, the host keeps serving", async () => {
    useTestRelay();
    const provider = new HostProvider();
    try {
      const spinning = deferred();
      const s = await provider.openSession(
        { ...callbacks(), notify: () => spinning.resolve() },
        { cpu_limit_ms: 60_000 },
      );
      assert.ok("ok" in s);
      const running = s.ok.execute({
        tool_call_id: "1",
        source: 'store("k", 1); text("spinning"); notify("spinning"); while (true) {}',
        yield_time_ms: 50,
      });
      await until(spinning.promise, "the busy loop to start");
      const term = await s.ok.terminate("1");
      const first = await running;
      // Terminated (not a CPU-limit Result): the terminate stopped it, not its 60 s budget.
      assert.ok("ok" in term && "LiveCell" in term.ok && "Terminated" in term.ok.LiveCell, JSON.stringify(term));
      assert.ok("ok" in first && "Terminated" in first.ok, JSON.stringify(first));
      const next = await s.ok.execute({ tool_call_id: "2", source: 'text(String(load("k")))' });
      assert.ok("ok" in next);
      assert.deepEqual(texts(next.ok), ["undefined"], "the terminated cell's write was discarded");
    } finally {
      await provider.close();
    }
  });
});

describe("code-mode host: shutdown with a CPU-bound cell", () => {
  test("shutting the session down stops a busy loop that never yielded", async () => {
    useTestRelay();
    const provider = new HostProvider();
    try {
      const spinning = deferred();
      const s = await provider.openSession(
        { ...callbacks(), notify: () => spinning.resolve() },
        { cpu_limit_ms: 60_000 },
      );
      assert.ok("ok" in s);
      const running = s.ok.execute({
        tool_call_id: "1",
        source: 'notify("spinning"); while (true) {}',
        yield_time_ms: 60_000,
      });
      // The host sends the ExecutionStarted answer before the notification, so the client already
      // counts the cell as running (and shutdown knows to stop it out of band).
      await until(spinning.promise, "the busy loop to start");
      await s.ok.shutdown();
      const first = await running;
      assert.ok("ok" in first && "Terminated" in first.ok, JSON.stringify(first));
      const again = await provider.openSession(callbacks());
      assert.ok("ok" in again);
      const r = await again.ok.execute({ tool_call_id: "2", source: 'text("served")' });
      assert.ok("ok" in r);
      assert.deepEqual(texts(r.ok), ["served"]);
    } finally {
      await provider.close();
    }
  });
});

describe("code-mode host crash", () => {
  test("a SIGKILLed host fails the pending exec clearly and the next session respawns", async () => {
    useTestRelay();
    const provider = new HostProvider();
    try {
      let delegateCancelled = false;
      const toolCalled = deferred();
      const s1 = await provider.openSession({
        invokeTool: (_call, signal) => {
          toolCalled.resolve();
          return new Promise((resolve) =>
            signal.addEventListener("abort", () => {
              delegateCancelled = true;
              resolve(ok(null));
            }),
          );
        },
      });
      assert.ok("ok" in s1);
      const pid = provider.hostPid;
      assert.ok(pid);
      const pending = s1.ok.execute({
        tool_call_id: "1",
        enabled_tools: echoTools,
        source: "await tools.echo({})",
        yield_time_ms: 60000,
      });
      await until(toolCalled.promise, "the script's tool call to reach the client");
      process.kill(pid, "SIGKILL");
      const r = await pending;
      assert.ok("error" in r, JSON.stringify(r));
      assert.equal(r.error.code, "code_mode_host_died");
      assert.match(r.error.message, /code-mode host died/);
      assert.ok(delegateCancelled, "the outstanding nested tool call was cancelled");
      const again = await s1.ok.execute({ tool_call_id: "2", source: "text(1)" });
      assert.ok("error" in again && again.error.code === "code_mode_host_died");

      const s2 = await provider.openSession(callbacks());
      assert.ok("ok" in s2, JSON.stringify(s2));
      assert.notEqual(provider.hostPid, pid);
      const fresh = await s2.ok.execute({ tool_call_id: "3", source: 'text("alive")' });
      assert.ok("ok" in fresh && "Result" in fresh.ok);
      assert.equal(fresh.ok.Result.cell_id, "1");
      assert.deepEqual(texts(fresh.ok), ["alive"]);
    } finally {
      await provider.close();
    }
  });
});
