import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ModelError, type ModelEvent, type ModelRequest } from "../../src/model/client.ts";
import { assistantMessage, type ResponseItem, userMessage } from "../../src/model/items.ts";
import { createResponsesClient, type ResponsesClientOptions } from "../../src/model/responses.ts";
import {
  contextWindowExceeded,
  drain,
  errorMidStream,
  type FakeModelServer,
  raw,
  reply,
  startFakeModelServer,
} from "../support/fake-model-server.ts";

const TINY_BACKOFF = { baseDelayMs: 1, maxDelayMs: 5 };

function client(server: FakeModelServer, extra: Partial<ResponsesClientOptions> = {}) {
  return createResponsesClient({
    baseUrl: server.baseUrl,
    model: "gpt-test",
    apiKey: "sk-test",
    retry: TINY_BACKOFF,
    ...extra,
  });
}

function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "gpt-test",
    instructions: "You are a test.",
    input: [userMessage("hello")],
    tools: [
      {
        kind: "function",
        name: "exec_command",
        description: "Run a command",
        parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
      },
      { kind: "custom", name: "apply_patch", description: "Apply a patch" },
    ],
    parallelToolCalls: true,
    ...over,
  };
}

const items = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "item" ? [e.item] : []));
const text = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("");

describe("Responses client", () => {
  test("sends the documented request shape", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("ok"));
    const history: ResponseItem[] = [
      userMessage("hi"),
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "gAAA" },
      { ...assistantMessage("sure"), id: "msg_1" },
      { type: "function_call", id: "fc_1", name: "exec_command", arguments: '{"cmd":"ls"}', call_id: "call_1" },
      { type: "function_call_output", call_id: "call_1", output: "a.txt" },
    ];
    const { error } = await drain(client(server, { headers: { "x-extra": "1" } }).stream(request({ input: history })));
    assert.equal(error, undefined);
    const [req] = server.requests;
    assert.equal(req!.path, "/v1/responses");
    assert.equal(req!.headers.authorization, "Bearer sk-test");
    assert.equal(req!.headers["x-extra"], "1");
    assert.deepEqual(req!.body, {
      model: "gpt-test",
      instructions: "You are a test.",
      input: [
        userMessage("hi"),
        // ids dropped (store=false keeps nothing); reasoning without encrypted content dropped
        { type: "reasoning", summary: [], encrypted_content: "gAAA" },
        assistantMessage("sure"),
        { type: "function_call", name: "exec_command", arguments: '{"cmd":"ls"}', call_id: "call_1" },
        { type: "function_call_output", call_id: "call_1", output: "a.txt" },
      ],
      tools: [
        {
          type: "function",
          name: "exec_command",
          description: "Run a command",
          parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
          strict: false,
        },
        { type: "custom", name: "apply_patch", description: "Apply a patch" },
      ],
      tool_choice: "auto",
      parallel_tool_calls: true,
      stream: true,
      store: false,
    });
  });

  test("reasoning options ask for encrypted reasoning", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("ok"));
    await drain(client(server, { reasoning: { effort: "high", summary: "auto" } }).stream(request()));
    assert.deepEqual(server.requests[0]!.body.reasoning, { effort: "high", summary: "auto" });
    assert.deepEqual(server.requests[0]!.body.include, ["reasoning.encrypted_content"]);
  });

  test("streams text deltas, then the message item, then completed with usage", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("Hello there, ").text("world!").usage({ input: 120, output: 7, cached: 100 }));
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    const deltas = events.filter((e) => e.type === "text_delta");
    assert.ok(deltas.length >= 3, "text arrives in several deltas");
    assert.equal(text(events), "Hello there, world!");
    const its = items(events);
    assert.equal(its.length, 1);
    assert.equal(its[0]!.type, "message");
    assert.deepEqual((its[0] as { content: unknown }).content, [
      { type: "output_text", text: "Hello there, world!", annotations: [] },
    ]);
    const last = events.at(-1)!;
    assert.equal(last.type, "completed");
    assert.match((last as { responseId?: string }).responseId ?? "", /^resp_/);
    assert.deepEqual((last as { usage?: unknown }).usage, {
      input_tokens: 120,
      output_tokens: 7,
      total_tokens: 127,
      cached_input_tokens: 100,
    });
    // items come after the deltas of their text
    assert.ok(events.findIndex((e) => e.type === "item") > events.findLastIndex((e) => e.type === "text_delta"));
  });

  test("reasoning, function calls and custom tool calls come as items in output order", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(
      reply()
        .reasoning("Thinking about ls.", "enc-1")
        .text("Let me look.")
        .toolCall("exec_command", { cmd: "ls -la" }, { callId: "call_a" })
        .toolCall("exec_command", { cmd: "pwd" }, { callId: "call_b" })
        .customToolCall("apply_patch", "*** Begin Patch\n*** End Patch\n", { callId: "call_c" }),
    );
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    assert.equal(
      events
        .filter((e) => e.type === "reasoning_delta")
        .map((e) => (e as { delta: string }).delta)
        .join(""),
      "Thinking about ls.",
    );
    const its = items(events);
    assert.deepEqual(
      its.map((i) => i.type),
      ["reasoning", "message", "function_call", "function_call", "custom_tool_call"],
    );
    assert.equal((its[0] as { encrypted_content?: string }).encrypted_content, "enc-1");
    assert.deepEqual(its[0]!.summary, [{ type: "summary_text", text: "Thinking about ls." }]);
    const fc = its[2] as { name: string; arguments: string; call_id: string };
    assert.deepEqual([fc.name, JSON.parse(fc.arguments), fc.call_id], ["exec_command", { cmd: "ls -la" }, "call_a"]);
    assert.equal((its[3] as { call_id: string }).call_id, "call_b");
    const ct = its[4] as { name: string; input: string; call_id: string };
    assert.deepEqual([ct.name, ct.input, ct.call_id], ["apply_patch", "*** Begin Patch\n*** End Patch\n", "call_c"]);
    assert.equal(events.at(-1)!.type, "completed");
  });

  test("response.failed mid-stream after output is a ModelError with the server message", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(errorMidStream({ message: "The engine melted." }));
    const { events, error } = await drain(client(server).stream(request()));
    assert.ok(text(events).length > 0);
    assert.ok(error instanceof ModelError);
    assert.equal(error.code, "server");
    assert.match(error.message, /The engine melted\./);
    assert.equal(server.requests.length, 1, "no retry after output");
  });

  test("an `error` event before any output is retried; rate-limit codes are retryable", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(
      reply().failWith(
        { code: "rate_limit_exceeded", message: "Rate limit reached. Please try again in 20ms." },
        "error",
      ),
      reply().text("second try"),
    );
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    const retry = events.find((e) => e.type === "retrying");
    assert.ok(retry && retry.type === "retrying");
    assert.equal(retry.delayMs, 20, "the server's 'try again in' hint is used");
    assert.equal(text(events), "second try");
  });

  test("context window exceeded, both as an HTTP 400 and in the stream", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(contextWindowExceeded(), contextWindowExceeded({ inStream: true }));
    for (let i = 0; i < 2; i++) {
      const { error } = await drain(client(server).stream(request()));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "context_window");
      assert.match(error.message, /context window/);
    }
    assert.equal(server.requests.length, 2, "not retried");
  });

  test("response.incomplete is an error naming the reason", async () => {
    await using server = await startFakeModelServer();
    const ev = (type: string, extra: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...extra })}\n\n`;
    server.enqueue(
      raw([
        ev("response.created", { response: { id: "resp_1" } }),
        ev("response.incomplete", { response: { id: "resp_1", incomplete_details: { reason: "max_output_tokens" } } }),
      ]),
    );
    const { error } = await drain(client(server).stream(request()));
    assert.ok(error instanceof ModelError);
    assert.match(error.message, /max_output_tokens/);
  });

  test("events without `type` in data fall back to the SSE event name; CRLF framing works", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(
      raw([
        'event: response.output_text.delta\r\ndata: {"delta":"Hi"}\r\n\r\n',
        'event: response.output_item.done\r\ndata: {"item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}\r\n\r\n',
        'event: response.completed\r\ndata: {"response":{"id":"resp_9","usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}}',
      ]),
    );
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    assert.deepEqual(events, [
      { type: "text_delta", delta: "Hi" },
      { type: "item", item: { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi" }] } },
      { type: "completed", responseId: "resp_9", usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 } },
    ]);
  });
});
