import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chatMessages, createChatClient, ToolCallAssembler } from "../../src/model/chat.ts";
import { ModelError, type ModelEvent, type ModelRequest } from "../../src/model/client.ts";
import type { TransportOptions } from "../../src/model/http.ts";
import { assistantMessage, developerMessage, type ResponseItem, userMessage } from "../../src/model/items.ts";
import {
  drain,
  errorMidStream,
  type FakeModelServer,
  raw,
  reply,
  startFakeModelServer,
} from "../support/fake-model-server.ts";

function client(server: FakeModelServer, extra: Partial<TransportOptions> = {}) {
  return createChatClient({
    baseUrl: server.baseUrl,
    model: "llama-test",
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    ...extra,
  });
}

const EXEC = {
  kind: "function" as const,
  name: "exec_command",
  description: "Run a command",
  parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
};
const PATCH = { kind: "custom" as const, name: "apply_patch", description: "Apply a patch" };

function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "llama-test",
    instructions: "Be brief.",
    input: [userMessage("hello")],
    tools: [EXEC, PATCH],
    parallelToolCalls: true,
    ...over,
  };
}

const items = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "item" ? [e.item] : []));
const text = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("");
const calls = (events: ModelEvent[]) =>
  items(events)
    .filter((i) => i.type === "function_call")
    .map((i) => {
      const c = i as { name: string; arguments: string; call_id: string };
      return { name: c.name, args: JSON.parse(c.arguments) as unknown, call_id: c.call_id };
    });

describe("Chat Completions client", () => {
  test("converts a full history with tool outputs into exact chat messages", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("done"));
    const history: ResponseItem[] = [
      developerMessage("Sandbox: read-only."),
      userMessage("list files and patch"),
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "thinking" }] },
      assistantMessage("Looking."),
      { type: "function_call", name: "exec_command", arguments: '{"cmd":"ls"}', call_id: "call_1" },
      { type: "function_call", name: "exec_command", arguments: '{"cmd":"pwd"}', call_id: "call_2" },
      { type: "function_call_output", call_id: "call_1", output: "a.txt\nb.txt" },
      { type: "function_call_output", call_id: "call_2", output: "/work" },
      { type: "custom_tool_call", name: "apply_patch", input: "*** Begin Patch", call_id: "call_3" },
      { type: "custom_tool_call_output", call_id: "call_3", output: "Done!" },
      { type: "web_search_call", id: "ws_1" },
      assistantMessage("All done."),
      developerMessage("Approval mode changed."),
      userMessage("thanks"),
    ];
    const { error } = await drain(client(server).stream(request({ input: history, parallelToolCalls: false })));
    assert.equal(error, undefined);
    const req = server.requests[0]!;
    assert.equal(req.path, "/v1/chat/completions");
    assert.equal(req.headers.authorization, undefined, "local servers get no key");
    assert.deepEqual(req.body, {
      model: "llama-test",
      messages: [
        { role: "system", content: "Be brief.\n\nSandbox: read-only." },
        { role: "user", content: "list files and patch" },
        {
          role: "assistant",
          content: "Looking.",
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "exec_command", arguments: '{"cmd":"ls"}' } },
            { id: "call_2", type: "function", function: { name: "exec_command", arguments: '{"cmd":"pwd"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "a.txt\nb.txt" },
        { role: "tool", tool_call_id: "call_2", content: "/work" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_3",
              type: "function",
              function: { name: "apply_patch", arguments: '{"input":"*** Begin Patch"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_3", content: "Done!" },
        { role: "assistant", content: "All done." },
        { role: "system", content: "Approval mode changed." },
        { role: "user", content: "thanks" },
      ],
      tools: [
        {
          type: "function",
          function: { name: "exec_command", description: "Run a command", parameters: EXEC.parameters },
        },
        {
          type: "function",
          function: {
            name: "apply_patch",
            description: "Apply a patch",
            parameters: {
              type: "object",
              properties: { input: { type: "string", description: "The raw text input for this tool." } },
              required: ["input"],
              additionalProperties: false,
            },
          },
        },
      ],
      tool_choice: "auto",
      parallel_tool_calls: false,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  test("without instructions, leading developer messages still make one system message", () => {
    assert.deepEqual(chatMessages("", [developerMessage("a"), developerMessage("b"), userMessage("u")]), [
      { role: "system", content: "a\n\nb" },
      { role: "user", content: "u" },
    ]);
  });

  test("images become image_url parts", () => {
    const msgs = chatMessages("", [
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "what is this?" },
          { type: "input_image", image_url: "data:image/png;base64,AAA" },
        ],
      },
    ]);
    assert.deepEqual(msgs, [
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAA" } },
        ],
      },
    ]);
  });

  test("streams text, then the message item, then completed with usage", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("Hello from a local model.").usage({ input: 50, output: 6, cached: 32 }));
    const { events, error } = await drain(client(server).stream(request({ tools: [] })));
    assert.equal(error, undefined);
    assert.equal(server.requests[0]!.body.tools, undefined);
    assert.ok(events.filter((e) => e.type === "text_delta").length > 1);
    assert.equal(text(events), "Hello from a local model.");
    assert.deepEqual(items(events), [
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Hello from a local model." }] },
    ]);
    const last = events.at(-1)!;
    assert.equal(last.type, "completed");
    assert.deepEqual((last as { usage?: unknown }).usage, {
      input_tokens: 50,
      output_tokens: 6,
      total_tokens: 56,
      cached_input_tokens: 32,
    });
    assert.match((last as { responseId?: string }).responseId ?? "", /^chatcmpl_/);
  });

  for (const style of ["fragments", "whole", "no-index", "interleaved"] as const) {
    test(`assembles parallel tool calls from ${style} deltas; order is message, calls, completed`, async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        reply()
          .text("Running two commands.")
          .toolCall("exec_command", { cmd: 'ls -la /tmp && echo "quoted"' }, { callId: "call_x" })
          .toolCall("exec_command", { cmd: "pwd" }, { callId: "call_y" })
          .chatStyle({ toolCalls: style }),
      );
      const { events, error } = await drain(client(server).stream(request()));
      assert.equal(error, undefined);
      assert.deepEqual(calls(events), [
        { name: "exec_command", args: { cmd: 'ls -la /tmp && echo "quoted"' }, call_id: "call_x" },
        { name: "exec_command", args: { cmd: "pwd" }, call_id: "call_y" },
      ]);
      const kinds = events
        .filter((e) => e.type !== "text_delta")
        .map((e) => (e.type === "item" ? e.item.type : e.type));
      assert.deepEqual(kinds, ["message", "function_call", "function_call", "completed"]);
    });
  }

  test("custom tool calls come back as custom_tool_call items", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().customToolCall("apply_patch", "*** Begin Patch\n+x\n*** End Patch", { callId: "call_p" }));
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    assert.deepEqual(items(events), [
      { type: "custom_tool_call", name: "apply_patch", input: "*** Begin Patch\n+x\n*** End Patch", call_id: "call_p" },
    ]);
  });

  test("reasoning_content and reasoning deltas become reasoning deltas and a reasoning item", async () => {
    for (const field of ["reasoning_content", "reasoning"] as const) {
      await using server = await startFakeModelServer();
      server.enqueue(reply().reasoning("Let me think.").text("Answer.").chatStyle({ reasoningField: field }));
      const { events, error } = await drain(client(server).stream(request()));
      assert.equal(error, undefined);
      assert.equal(
        events
          .filter((e) => e.type === "reasoning_delta")
          .map((e) => (e as { delta: string }).delta)
          .join(""),
        "Let me think.",
      );
      assert.deepEqual(
        items(events).map((i) => i.type),
        ["reasoning", "message"],
      );
      assert.equal(text(events), "Answer.");
    }
  });

  test("a stream that ends after finish_reason without [DONE] still completes", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("no done marker").chatStyle({ omitDone: true }));
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    assert.equal(events.at(-1)!.type, "completed");
  });

  test("an error chunk after text is retried with the partial text dropped; with retries off it is a ModelError with the server message", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(errorMidStream({ message: "CUDA out of memory" }), reply().text("recovered"));
    const retried = await drain(client(server).stream(request()));
    assert.equal(retried.error, undefined);
    const retry = retried.events.find((e) => e.type === "retrying");
    assert.ok(
      retry && retry.type === "retrying" && retry.discardPartial && /CUDA out of memory/.test(retry.reason),
      JSON.stringify(retry),
    );
    assert.equal(text(retried.events.slice(retried.events.indexOf(retry) + 1)), "recovered");
    server.enqueue(errorMidStream({ message: "CUDA out of memory" }));
    const { events, error } = await drain(client(server, { retry: { maxRetries: 0 } }).stream(request()));
    assert.ok(text(events).length > 0);
    assert.ok(error instanceof ModelError);
    assert.match(error.message, /CUDA out of memory/);
    assert.equal(server.requests.length, 3);
  });

  test("tolerates single-newline framing and whole calls without index or id", async () => {
    await using server = await startFakeModelServer();
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c1", choices: [{ index: 0, delta, finish_reason: finish }] })}\n`;
    server.enqueue(
      raw([
        chunk({ role: "assistant", content: "" }),
        chunk({ tool_calls: [{ function: { name: "exec_command", arguments: { cmd: "ls" } } }] }),
        chunk({ tool_calls: [{ id: "second", function: { name: "exec_command", arguments: '{"cmd":"pwd"}' } }] }),
        chunk({}, "tool_calls"),
        "data: [DONE]\n",
      ]),
    );
    const { events, error } = await drain(client(server).stream(request()));
    assert.equal(error, undefined);
    const got = calls(events);
    assert.equal(got.length, 2);
    assert.deepEqual(got[0]!.args, { cmd: "ls" });
    assert.match(got[0]!.call_id, /^call_/);
    assert.deepEqual(got[1], { name: "exec_command", args: { cmd: "pwd" }, call_id: "second" });
  });

  test("ToolCallAssembler: index reuse with a new id starts a new call; repeated names are not doubled", () => {
    const a = new ToolCallAssembler();
    a.push([{ index: 0, id: "a", function: { name: "f", arguments: '{"x"' } }]);
    a.push([{ index: 0, function: { name: "f", arguments: ":1}" } }]);
    a.push([{ index: 0, id: "b", function: { name: "g", arguments: "{}" } }]);
    assert.deepEqual(a.calls, [
      { id: "a", name: "f", arguments: '{"x":1}' },
      { id: "b", name: "g", arguments: "{}" },
    ]);
  });
});
