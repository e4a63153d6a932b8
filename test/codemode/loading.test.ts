/**
 * A code-mode host reads requests while QuickJS is still loading (its wasm compiles on background
 * threads): they wait for the engine and are then served in the order they came; a load that
 * fails answers them with its reason.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setImmediate } from "node:timers/promises";
import { CodeModeEngine } from "../../src/codemode/engine.ts";
import { serveCodeMode } from "../../src/codemode/server.ts";
import { CodeModeMethods } from "../../src/contracts/code-mode.ts";
import { peerPair } from "../support/streams.ts";

/** A promise for the engine that the test settles itself. */
function pendingEngine(): {
  loading: Promise<CodeModeEngine>;
  resolve(e: CodeModeEngine): void;
  reject(e: Error): void;
} {
  let resolve!: (e: CodeModeEngine) => void;
  let reject!: (e: Error) => void;
  const loading = new Promise<CodeModeEngine>((res, rej) => ((resolve = res), (reject = rej)));
  return { loading, resolve, reject };
}

describe("code-mode host: requests before QuickJS has loaded", () => {
  test("wait for the engine, then are served in the order they came", async () => {
    const { left, right } = peerPair();
    const engine = pendingEngine();
    const shutdown = serveCodeMode(right, engine.loading);
    let answers = 0;
    const counted = <T>(p: Promise<T>) => p.then((r) => (answers++, r));
    const hello = counted(left.call(CodeModeMethods.hello, {}));
    const created = counted(left.call(CodeModeMethods.createSession, {}));
    const executed = counted(
      left.call(CodeModeMethods.execute, { session_id: 1, request: { tool_call_id: "c1", source: 'text("ran")' } }),
    );
    // The frames are read and handed to their handlers in these turns; nothing can answer yet.
    for (let i = 0; i < 20; i++) await setImmediate();
    assert.equal(answers, 0);

    engine.resolve(await CodeModeEngine.load());
    const h = await hello;
    assert.ok("ok" in h, JSON.stringify(h));
    // In arrival order: hello before the session existed, the execute after it did.
    assert.equal(h.ok.sessions, 0, "hello was served before the session was created");
    assert.deepEqual(await created, { ok: { session_id: 1 } });
    const e = await executed;
    assert.ok("ok" in e, JSON.stringify(e));
    assert.deepEqual(e.ok.initial, {
      Result: { cell_id: "1", content_items: [{ type: "input_text", text: "ran" }], error_text: null },
    });
    shutdown();
    left.close();
    right.close();
  });

  test("a load that fails answers the waiting requests with its reason", async () => {
    const { left, right } = peerPair();
    const engine = pendingEngine();
    serveCodeMode(right, engine.loading);
    const created = left.call(CodeModeMethods.createSession, {});
    for (let i = 0; i < 20; i++) await setImmediate();
    engine.reject(new Error("wasm validation failed"));
    const r = await created;
    assert.ok("error" in r, JSON.stringify(r));
    assert.match(r.error.message, /create_session failed: wasm validation failed/);
    left.close();
    right.close();
  });
});
