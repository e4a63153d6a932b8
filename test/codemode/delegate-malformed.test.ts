/**
 * A nested tool call goes host -> orchestrator as a codemode/invoke_tool request (a delegate
 * request). Whatever comes back, or fails to, the pending call inside the cell must settle:
 * the script's promise rejects with the reason and the script goes on.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { after, describe, test } from "node:test";
import { InProcessProvider } from "../../src/codemode/in-process-provider.ts";
import type { RuntimeResponse } from "../../src/contracts/code-mode.ts";
import type { CodeModeCallbacks } from "../../src/contracts/code-mode-provider.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";
import { RawChild, type RawMessage, rawFrame, requestFrame } from "../support/raw-frames.ts";
import { useTestRelay } from "../support/self.ts";
import { until } from "../support/wait.ts";

useTestRelay();

const probeTool = [{ name: "probe", description: "", kind: "function" as const }];
/** Calls the tool `n` times; each outcome becomes one line of output. */
const probeScript = (n: number) =>
  `for (let i = 0; i < ${n}; i++) { try { text("ok " + JSON.stringify(await tools.probe({ i }))); } catch (e) { text("rejected " + String(e)); } }`;
const texts = (r: RuntimeResponse) =>
  ("Yielded" in r ? r.Yielded : "Terminated" in r ? r.Terminated : r.Result).content_items.map((i) =>
    i.type === "input_text" ? i.text : "",
  );

describe("malformed delegate replies: from the orchestrator's own client", () => {
  const provider = new HostProvider({ program: { kind: "self" } });
  after(() => provider.close());

  test("a reply the orchestrator cannot encode, one too large and one that is no Result value each reject the call in the cell", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const replies = [
      ok(cyclic),
      ok("x".repeat(17 * 1024 * 1024)),
      { error: { code: "broken" } } as never,
      ok({ fine: true }),
    ];
    const callbacks: CodeModeCallbacks = { invokeTool: async (call) => replies[(call.input as { i: number }).i]! };
    const session = await provider.openSession(callbacks);
    assert.ok("ok" in session, JSON.stringify(session));
    const r = await until(
      session.ok.execute({
        tool_call_id: "c1",
        enabled_tools: probeTool,
        source: probeScript(4),
        yield_time_ms: 600_000,
      }),
      "the cell to finish",
    );
    assert.ok("ok" in r, JSON.stringify(r));
    assert.ok("Result" in r.ok && r.ok.Result.error_text === null, JSON.stringify(r.ok));
    const lines = texts(r.ok);
    assert.match(lines[0]!, /^rejected the response to codemode\/invoke_tool could not be encoded: /);
    assert.match(
      lines[1]!,
      /^rejected the response to codemode\/invoke_tool was too large: \d+ bytes > the 16777216-byte frame limit/,
    );
    assert.match(
      lines[2]!,
      /^rejected the handler of codemode\/invoke_tool returned something that is not a Result value/,
    );
    assert.equal(lines[3], 'ok {"fine":true}');
    await session.ok.shutdown();
  });
});

describe("malformed delegate replies: in process", () => {
  const provider = new InProcessProvider();
  after(() => provider.close());

  test("a cyclic result and one too big for the cell's memory reject the call; the runtime carries on", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const big = Array.from({ length: 200_000 }, (_, i) => ({ i }));
    const replies = [ok(cyclic), ok(big), ok({ fine: true })];
    const session = await provider.openSession(
      { invokeTool: async (call) => replies[(call.input as { i: number }).i]! },
      { memory_limit_bytes: 2 << 20 },
    );
    assert.ok("ok" in session, JSON.stringify(session));
    const r = await until(
      session.ok.execute({
        tool_call_id: "c1",
        enabled_tools: probeTool,
        source: probeScript(3),
        yield_time_ms: 600_000,
      }),
      "the cell to finish",
    );
    assert.ok("ok" in r && "Result" in r.ok, JSON.stringify(r));
    assert.equal(r.ok.Result.error_text, null, "the call failed, not the runtime");
    const lines = texts(r.ok);
    assert.match(lines[0]!, /^rejected the result of the tool call cannot be passed to the script: /);
    assert.match(lines[1]!, /^rejected .*out of memory/i);
    assert.equal(lines[2], 'ok {"fine":true}');
    await session.ok.shutdown();
  });
});

describe("malformed delegate replies: raw bytes to the host", () => {
  test("replies with a bad envelope, invalid UTF-8, cut JSON or nesting too deep each reject the call in the cell", async () => {
    const host = new RawChild(["code-mode-host"]);
    const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
    const replies: Array<(id: string) => Buffer> = [
      (id) => rawFrame(`{"type":"response","id":${id},"result":{"error":{"code":"x"}}}`),
      (id) =>
        rawFrame(
          Buffer.concat([
            Buffer.from(`{"type":"response","id":${id},"result":{"ok":{"result":"`),
            Buffer.from([0xff]),
            Buffer.from('"}}}'),
          ]),
        ),
      (id) => rawFrame(`{"type":"response","id":${id},"result":{"ok":{"res`),
      (id) => rawFrame(`{"type":"response","id":${id},"result":{"ok":{"result":${nest(100_000)}}}}`),
      (id) => rawFrame(`{"type":"response","id":${id},"result":{"ok":{"result":"fine"}}}`),
    ];
    await host.write(requestFrame(1, "codemode/create_session"));
    assert.ok((await host.response("1"))?.value.result?.ok, host.stderr);
    await host.write(
      requestFrame(2, "codemode/execute", {
        session_id: 1,
        request: {
          tool_call_id: "c",
          enabled_tools: probeTool,
          source: probeScript(replies.length),
          yield_time_ms: 600_000,
        },
      }),
    );
    const toolCalls = () =>
      host.messages.filter((m) => m.value.type === "request" && m.value.method === "codemode/invoke_tool");
    for (let i = 0; i < replies.length; i++) {
      assert.ok(
        await until(
          host.when(() => toolCalls().length > i),
          `tool call ${i + 1} (the previous one did not settle)`,
        ),
        host.stderr,
      );
      await host.write(replies[i]!(toolCalls()[i]!.id!));
    }
    const isResult = (m: RawMessage) =>
      m.value.method === "codemode/initial_response" ||
      (m.id === "2" && (m.value.result?.ok as { initial?: unknown } | undefined)?.initial !== undefined);
    assert.ok(
      await until(
        host.when(() => host.messages.some(isResult)),
        "the cell's result",
      ),
      host.stderr,
    );
    const m = host.messages.find(isResult)!;
    const response = m.value.method
      ? (m.value.params as { response: { ok: RuntimeResponse } }).response.ok
      : (m.value.result!.ok as { initial: RuntimeResponse }).initial;
    assert.ok("Result" in response && response.Result.error_text === null, JSON.stringify(response));
    const lines = texts(response);
    assert.equal(lines.length, replies.length, lines.join("\n"));
    for (const l of lines.slice(0, 4)) assert.match(l, /^rejected /);
    assert.match(lines[0]!, /the response to codemode\/invoke_tool was malformed: not a valid message/);
    assert.match(lines[1]!, /was malformed: skipped a \d+-byte frame: the frame payload is not valid UTF-8/);
    assert.match(lines[2]!, /was malformed: skipped a \d+-byte frame: the frame payload is not JSON/);
    assert.match(
      lines[3]!,
      /was malformed: skipped a \d+-byte frame: the frame payload nests arrays and objects deeper than 1000 levels/,
    );
    assert.equal(lines[4], 'ok "fine"');
    host.end();
    assert.deepEqual(await host.exited, { code: 0, signal: null }, host.stderr);
    assert.equal(host.stderr, "", "every bad reply settled a call: nothing left to report");
  });
});
