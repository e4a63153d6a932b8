/**
 * Code mode's limits hold on every route a script can make a host hold memory by: the QuickJS
 * heap (growth and reuse), text, stored values, tool-call inputs; and a cell that breaks one
 * ends with a clear error while its session and new sessions go on answering. Also: a promise
 * storm over the CPU limit is an error whose stores are dropped, and an unhandled rejection is
 * reported.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { CodeModeEngine, type EngineSession } from "../../src/codemode/engine.ts";
import { FIXED_HEAP_OVERHEAD_BYTES } from "../../src/codemode/heap-guard.ts";
import { CodeModeMethods, CodeModeNotifications, type RuntimeResponse } from "../../src/contracts/code-mode.ts";
import { type ChildPeer, spawnSelf } from "../../src/protocol/child.ts";
import { err, ok } from "../../src/util/result.ts";
import { useTestRelay } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";
import { Inbox, until } from "../support/wait.ts";

const MiB = 2 ** 20;
const tools = [
  { name: "echo", description: "", kind: "function" as const },
  { name: "broken", description: "", kind: "function" as const },
];
const delegate = {
  invokeTool: async (call: { tool_name: string }) =>
    call.tool_name === "broken" ? err("tool_failed", "the tool broke") : ok("echoed"),
  notify: async () => {},
};

async function run(s: EngineSession, source: string): Promise<{ error: string | null; texts: string[] }> {
  const r = s.execute({ tool_call_id: "t", source, enabled_tools: tools, yield_time_ms: 60_000 });
  assert.ok("ok" in r, JSON.stringify(r));
  const out = await r.ok.initial;
  assert.ok("Result" in out, JSON.stringify(out).slice(0, 500));
  return {
    error: out.Result.error_text,
    texts: out.Result.content_items.map((i) => (i.type === "input_text" ? i.text : "")),
  };
}

const ALLOCATE = "const a = []; while (true) a.push(new Array(1e5).fill(1));";

describe("code-mode limits (in process)", () => {
  let engine: CodeModeEngine;
  before(async () => {
    engine = await CodeModeEngine.load();
  });

  test("a cell that only allocates ends at its memory limit, the heap stays under its ceiling, and sessions go on", async () => {
    const s = engine.openSession(delegate, { memory_limit_bytes: 16 * MiB });
    const r = await run(s, ALLOCATE);
    assert.match(r.error ?? "", /^exec cell 1 ran out of memory: .*memory limit of 16 MiB \(memory_limit_bytes\)/);
    assert.ok(
      engine.heap.heapBytes <= engine.heap.ceilingBytes,
      `heap ${engine.heap.heapBytes} over ceiling ${engine.heap.ceilingBytes}`,
    );
    assert.deepEqual(await run(s, 'text("same session")'), { error: null, texts: ["same session"] });
    const fresh = engine.openSession(delegate);
    assert.deepEqual(await run(fresh, 'text("new session")'), { error: null, texts: ["new session"] });
    s.shutdown();
    fresh.shutdown();
  });

  test("catching out-of-memory does not save the cell, and its stores are not committed", async () => {
    const s = engine.openSession(delegate, { memory_limit_bytes: 16 * MiB });
    const r = await run(
      s,
      `store("mine", 1); try { ${ALLOCATE} } catch (e) { text("caught: " + e) } store("after", 2); text("went on")`,
    );
    assert.match(r.error ?? "", /ran out of memory/);
    assert.deepEqual(await run(s, "text(JSON.stringify([load('mine') ?? null, load('after') ?? null]))"), {
      error: null,
      texts: ["[null,null]"],
    });
    s.shutdown();
  });

  test("memory an earlier cell freed is reused without growing the heap, and still counts: the runtime's usage is measured", async () => {
    const big = engine.openSession(delegate, { memory_limit_bytes: 96 * MiB });
    // Leaves 64 MiB of heap free once the cell's runtime is freed.
    assert.equal(
      (
        await run(
          big,
          "const a = []; for (let i = 0; i < 80; i++) a.push(new Array(1e5).fill(i)); text(String(a.length))",
        )
      ).error,
      null,
    );
    big.shutdown();
    const small = engine.openSession(delegate, { memory_limit_bytes: 8 * MiB });
    const heapBefore = engine.heap.heapBytes;
    const r = await run(
      small,
      "const a = []; for (let i = 0; i < 60; i++) a.push(new Array(1e5).fill(i)); text('all of it')",
    );
    assert.match(
      r.error ?? "",
      /^exec cell 1 ran out of memory: its runtime holds \d+ MiB, over its memory limit of 8 MiB/,
    );
    assert.equal(engine.heap.heapBytes, heapBefore, "the heap did not grow: only the measurement could stop it");
    small.shutdown();
  });

  test("tool-call inputs in flight are bounded: a loop of large calls ends the cell at once", async () => {
    const s = engine.openSession(delegate);
    const r = await run(s, "const big = 'q'.repeat(1 << 20); for (let i = 0; i < 1000; i++) tools.echo({ big });");
    assert.match(r.error ?? "", /characters of tool-call inputs and notifications in flight/);
    assert.deepEqual(await run(s, "text(await tools.echo({}))"), { error: null, texts: ["echoed"] });
    s.shutdown();
  });

  test("a notification over 64 KiB is cut inside the VM and says how much was dropped", async () => {
    const notes: string[] = [];
    const s = engine.openSession({ ...delegate, notify: async (n: { text: string }) => void notes.push(n.text) });
    assert.equal((await run(s, "notify('n'.repeat(100000)); text('sent')")).error, null);
    assert.equal(notes.length, 1);
    assert.equal(notes[0], `${"n".repeat(64 * 1024)}\n[... ${100000 - 64 * 1024} characters dropped]`);
    s.shutdown();
  });

  test("a microtask storm over the CPU limit is an error, and what it stored is not committed", async () => {
    const s = engine.openSession(delegate, { cpu_limit_ms: 200 });
    const r = await run(
      s,
      "store('before', 1); let n = 0; const spin = () => { store('k', ++n); Promise.resolve().then(spin); }; spin();",
    );
    assert.equal(r.error, "exec cell 1 exceeded its CPU time limit of 200 ms");
    assert.deepEqual(await run(s, "text(JSON.stringify([load('before') ?? null, load('k') ?? null]))"), {
      error: null,
      texts: ["[null,null]"],
    });
    s.shutdown();
  });

  test("a rejection nothing handles is reported in the cell's result; handled ones are not", async () => {
    const s = engine.openSession(delegate);
    assert.deepEqual(await run(s, "Promise.reject(new Error('boom')); text('done')"), {
      error: "Unhandled promise rejection: Error: boom",
      texts: ["done"],
    });
    assert.deepEqual(await run(s, "tools.broken({}); await new Promise((r) => setTimeout(r, 20)); text('done')"), {
      error: "Unhandled promise rejection: the tool broke",
      texts: ["done"],
    });
    const chained = await run(
      s,
      "tools.broken({}).then(() => text('never')); Promise.reject(2); await new Promise((r) => setTimeout(r, 20))",
    );
    // In the order they were rejected: Promise.reject at once, the tool call's derived promise later.
    assert.equal(chained.error, "Unhandled promise rejection: 2 (and 1 more)");
    const handled = await run(
      s,
      "try { await Promise.reject(new Error('x')) } catch {} Promise.reject(1).catch(() => {}); const late = tools.broken({}); await null; await late.catch(() => {}); await Promise.allSettled([tools.broken({})]); text(String(late instanceof Promise))",
    );
    assert.deepEqual(handled, { error: null, texts: ["true"] });
    s.shutdown();
  });

  test("native promises too: async functions, async arrows and methods, new Promise, import(), a throwing .then callback", async () => {
    const s = engine.openSession(delegate);
    const unhandled: Array<[string, string]> = [
      ["async function f() { throw new Error('in f') } f(); await null", "Error: in f"],
      ["const g = async () => { throw new Error('arrow') }; g(); await null", "Error: arrow"],
      ["const h = async (x) => Promise.reject(new Error('expr ' + x)); h(1); await null", "Error: expr 1"],
      ["const o = { async m() { throw new Error('method') } }; o.m(); await null", "Error: method"],
      ["class C { static async s() { throw new Error('static') } }; C.s(); await null", "Error: static"],
      ["new Promise((_, reject) => reject(new Error('ctor'))); await null", "Error: ctor"],
      ["new Promise(() => { throw new Error('thrown in executor') }); await null", "Error: thrown in executor"],
      ["import('nope'); await new Promise((r) => setTimeout(r, 5))", "nope"],
      [
        "(async () => 1)().then(() => { throw new Error('in then') }); await new Promise((r) => setTimeout(r, 5))",
        "Error: in then",
      ],
      [
        "async function outer() { async function inner() { throw new Error('nested') } inner() } outer(); await null",
        "Error: nested",
      ],
    ];
    for (const [cell, reason] of unhandled) {
      const r = await run(s, cell);
      assert.ok(
        r.error?.startsWith("Unhandled promise rejection: ") && r.error.includes(reason),
        `${cell} -> ${r.error}`,
      );
    }
    const handled = [
      "async function f() { throw new Error('x') } try { await f() } catch {} f().catch(() => {}); text('ok')",
      "const g = async () => { throw 1 }; const p = g(); await null; await p.catch(() => {}); text('ok')",
      "await new Promise((_, reject) => reject(2)).catch(() => {}); text('ok')",
      "new Promise((resolve, reject) => { resolve(1); reject(new Error('too late')) }); await null; text('ok')",
      "try { await import('nope') } catch { text('ok') }",
      "const o = { async m(a, b) { return this.k + a + b + arguments.length }, k: 1 }; text(String(await o.m(2, 3)))",
      "const s = 'async function () {}', re = /async ()=>x/; async function f() { return [s.length, re.source] } text(JSON.stringify(await f()))",
      "async function* gen() { yield 1 } for await (const v of gen()) text(String(v))",
      "const async = (x) => x + 1; text(String(async(1)))",
      "text(String((async () => 1)() instanceof Promise))",
      // The rewrite of this arrow would swallow the next line (no semicolon): it does not compile, so the cell runs as written.
      "const f = async () => 1\ntext(String(await f()))",
    ];
    const outputs = ["ok", "ok", "ok", "ok", "ok", "8", '[20,"async ()=>x"]', "1", "2", "true", "1"];
    for (const [n, cell] of handled.entries())
      assert.deepEqual(await run(s, cell), { error: null, texts: [outputs[n]!] }, cell);
    s.shutdown();
  });

  test("a cell that replaces Promise.prototype.then fails: its rejections could no longer be told apart", async () => {
    const s = engine.openSession(delegate);
    const r = await run(
      s,
      "const t = Promise.prototype.then; Promise.prototype.then = function (a, b) { return t.call(this, a, b) }; text('ran')",
    );
    assert.deepEqual(r, {
      error:
        "Unhandled promise rejection: the cell replaced Promise.prototype.then, so relay cannot tell which of its promise rejections were handled",
      texts: ["ran"],
    });
    s.shutdown();
  });
});

const notLinux = process.platform !== "linux" && "peak RSS is read from /proc";
skipBecause("code-mode limits (host process)", notLinux);

describe("code-mode limits (host process)", { skip: notLinux }, () => {
  let host: ChildPeer;
  const initial = new Inbox<{ id: number; response: { ok?: RuntimeResponse } }>();
  before(() => {
    useTestRelay();
    const s = spawnSelf("code-mode-host");
    assert.ok("ok" in s);
    host = s.ok;
    host.peer.onNotification(CodeModeNotifications.initialResponse, (n) =>
      initial.push(n as { id: number; response: { ok?: RuntimeResponse } }),
    );
    host.peer.handle(CodeModeMethods.invokeTool, () => ok({ result: "ok" }));
    host.peer.handle(CodeModeMethods.notify, () => ok({ delivered: true as const }));
  });
  after(async () => {
    await host.shutdown();
  });

  const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${host.pid}/status`, "utf8"))![1]) * 1024;

  async function cell(sid: number, source: string): Promise<RuntimeResponse> {
    const r = await host.peer.call(CodeModeMethods.execute, {
      session_id: sid,
      request: { tool_call_id: "t", source, enabled_tools: tools, yield_time_ms: 60_000 },
    });
    assert.ok("ok" in r, JSON.stringify(r));
    if (r.ok.initial) return r.ok.initial;
    // Cells run one at a time here, so the next initial response is this cell's.
    const n = await until(initial.next(), `cell ${r.ok.cell_id}'s initial response`);
    assert.equal(n.id, r.ok.execute_id);
    assert.ok(n.response.ok, JSON.stringify(n));
    return n.response.ok;
  }

  test("a cell down each route leaves the host's peak RSS within its session's limit plus a fixed overhead; it still answers", async () => {
    const limit = 32 * MiB;
    const created = await host.peer.call(CodeModeMethods.createSession, {
      limits: { memory_limit_bytes: limit, cpu_limit_ms: 3000 },
    });
    assert.ok("ok" in created);
    const sid = created.ok.session_id;
    assert.deepEqual(await cell(sid, "text('warm')"), {
      Result: { cell_id: "1", content_items: [{ type: "input_text", text: "warm" }], error_text: null },
    });
    const baseline = peakRss();
    const routes: Record<string, [string, RegExp]> = {
      "the QuickJS heap": [ALLOCATE, /ran out of memory/],
      "one huge string": ["let s = 'x'.repeat(1 << 20); while (true) s = s + s;", /out of memory|string too long/],
      text: ["const mb = 'y'.repeat(1 << 20); while (true) text(mb);", /characters of output it could not keep/],
      "stored values": [
        "const mb = 'z'.repeat(1 << 20); for (let i = 0; ; i++) store('k' + i, mb);",
        /stored values would exceed/,
      ],
      "tool-call inputs": ["const mb = 'q'.repeat(1 << 20); for (let i = 0; ; i++) tools.echo({ mb });", /in flight/],
      notifications: ["const kb = 'n'.repeat(60000); for (let i = 0; ; i++) notify(kb);", /in flight|too many/],
    };
    for (const [route, [source, expected]] of Object.entries(routes)) {
      const r = await cell(sid, source);
      assert.ok("Result" in r, `${route}: ${JSON.stringify(r).slice(0, 300)}`);
      assert.match(r.Result.error_text ?? "", expected, route);
      const answered = await cell(sid, "text('still here')");
      assert.ok(
        "Result" in answered && answered.Result.error_text === null,
        `${route}: the session answers afterwards`,
      );
    }
    const fresh = await host.peer.call(CodeModeMethods.createSession, {});
    assert.ok("ok" in fresh, "a new session can be made");
    // The host's own JS heap (copies of texts, inputs in flight, stored values) gets 96 MiB next to the wasm heap's bound.
    const bound = baseline + limit + FIXED_HEAP_OVERHEAD_BYTES + 96 * MiB;
    assert.ok(
      peakRss() <= bound,
      `peak RSS ${Math.round(peakRss() / MiB)} MiB, bound ${Math.round(bound / MiB)} MiB (baseline ${Math.round(baseline / MiB)} MiB)`,
    );
  });
});
