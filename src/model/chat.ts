/**
 * Chat Completions client (`POST {baseUrl}/chat/completions`) for OpenAI-compatible servers:
 * Ollama, vLLM, llama.cpp, LM Studio. Converts Responses-shaped history to chat messages and
 * assembles streamed tool-call fragments back into function_call items.
 */
import { z } from "zod";
import type { TokenUsage } from "../contracts/usage.ts";
import { fastParse, withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./chat-checks.generated.ts";
import { type ModelClient, ModelError, type ModelEvent, type ModelRequest, type ModelTool } from "./client.ts";
import {
  inStreamFailure,
  preconnectTransport,
  streamEndedEarly,
  streamWithRetry,
  type TransportOptions,
} from "./http.ts";
import type { ContentPart, ResponseItem } from "./items.ts";
import { jsonPayloads, type SseEvent } from "./sse.ts";
import { wireItems } from "./wire-items.ts";

export const ChatToolCallSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    type: z.literal("function"),
    function: z.object({ name: z.string(), arguments: z.string() }),
  }),
);
export type ChatToolCall = z.infer<typeof ChatToolCallSchema>;

export const ChatContentPartSchema = lazySchema(() =>
  z.union([
    z.object({ type: z.literal("text"), text: z.string() }),
    z.object({ type: z.literal("image_url"), image_url: z.object({ url: z.string(), detail: z.string().optional() }) }),
  ]),
);

export const ChatMessageSchema = lazySchema(() =>
  z.union([
    z.object({ role: z.enum(["system", "user"]), content: z.union([z.string(), z.array(ChatContentPartSchema)]) }),
    z.object({
      role: z.literal("assistant"),
      content: z.string().nullable(),
      tool_calls: z.array(ChatToolCallSchema).optional(),
    }),
    z.object({ role: z.literal("tool"), tool_call_id: z.string(), content: z.string() }),
  ]),
);
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const ChatToolSchema = lazySchema(() =>
  z.object({
    type: z.literal("function"),
    function: z.object({ name: z.string(), description: z.string(), parameters: z.record(z.string(), z.unknown()) }),
  }),
);
export type ChatTool = z.infer<typeof ChatToolSchema>;

export const ChatRequestBodySchema = lazySchema(() =>
  z.object({
    model: z.string(),
    messages: z.array(ChatMessageSchema),
    tools: z.array(ChatToolSchema).optional(),
    tool_choice: z.literal("auto").optional(),
    parallel_tool_calls: z.boolean().optional(),
    stream: z.literal(true),
    stream_options: z.object({ include_usage: z.literal(true) }),
    response_format: z
      .object({
        type: z.literal("json_schema"),
        json_schema: z.object({ name: z.string(), schema: z.record(z.string(), z.unknown()), strict: z.literal(true) }),
      })
      .optional(),
  }),
);
export type ChatRequestBody = z.infer<typeof ChatRequestBodySchema>;

/** Custom (freeform) tools become function tools with one string argument, `input`. */
export const CUSTOM_TOOL_PARAMETERS = {
  type: "object",
  properties: { input: { type: "string", description: "The raw text input for this tool." } },
  required: ["input"],
  additionalProperties: false,
} as const;

export function chatTool(tool: ModelTool): ChatTool {
  const parameters =
    tool.kind === "custom" ? { ...CUSTOM_TOOL_PARAMETERS } : (tool.parameters ?? { type: "object", properties: {} });
  return { type: "function", function: { name: tool.name, description: tool.description, parameters } };
}

/**
 * Responses items → chat messages. Developer and system messages become `system` (the most
 * widely accepted role); those before the first other message join the instructions in one
 * leading system message, since many local chat templates accept only that. Function calls
 * that follow an assistant message join it as `tool_calls`; reasoning and unknown items have no
 * chat form and are left out.
 */
export function chatMessages(instructions: string, items: ResponseItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (instructions !== "") out.push({ role: "system", content: instructions });
  const pushCall = (call: ChatToolCall) => {
    const last = out.at(-1);
    if (last?.role === "assistant") (last.tool_calls ??= []).push(call);
    else out.push({ role: "assistant", content: null, tool_calls: [call] });
  };
  for (const item of items) {
    switch (item.type) {
      case "message": {
        const { role, content } = item as { role: string; content: ContentPart[] };
        const text = content.map((c) => ("text" in c ? c.text : "")).join("");
        if (role === "assistant") out.push({ role: "assistant", content: text });
        else if (role === "user" && content.some((c) => c.type === "input_image"))
          out.push({ role: "user", content: content.map(chatPart) });
        else if (role === "user") out.push({ role: "user", content: text });
        else if (out.length === 1 && out[0]!.role === "system" && typeof out[0]!.content === "string")
          out[0]!.content += `\n\n${text}`;
        else out.push({ role: "system", content: text });
        break;
      }
      case "function_call": {
        const c = item as { call_id: string; name: string; arguments: string };
        pushCall({ id: c.call_id, type: "function", function: { name: c.name, arguments: c.arguments } });
        break;
      }
      case "custom_tool_call": {
        const c = item as { call_id: string; name: string; input: string };
        pushCall({
          id: c.call_id,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify({ input: c.input }) },
        });
        break;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        const o = item as { call_id: string; output: unknown };
        out.push({ role: "tool", tool_call_id: o.call_id, content: outputText(o.output) });
        break;
      }
      default:
        break;
    }
  }
  return out;
}

function chatPart(c: ContentPart): z.infer<typeof ChatContentPartSchema> {
  if (c.type === "input_image")
    return { type: "image_url", image_url: c.detail ? { url: c.image_url, detail: c.detail } : { url: c.image_url } };
  return { type: "text", text: c.text };
}

/** Outputs are strings in Relay; Codex rollouts may hold content-part arrays. */
function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
  return JSON.stringify(output);
}

export function chatRequestBody(request: ModelRequest): ChatRequestBody {
  const body: ChatRequestBody = {
    model: request.model,
    messages: chatMessages(request.instructions, wireItems(request.input)),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map(chatTool);
    body.tool_choice = "auto";
    body.parallel_tool_calls = request.parallelToolCalls;
  }
  if (request.outputSchema)
    body.response_format = {
      type: "json_schema",
      json_schema: { name: request.outputSchema.name, schema: request.outputSchema.schema, strict: true },
    };
  return body;
}

const ErrorSchema = lazySchema(() =>
  z.looseObject({
    message: z.string().nullish(),
    code: z.union([z.string(), z.number()]).nullish(),
    type: z.string().nullish(),
  }),
);

const ToolCallDeltaSchema = lazySchema(() =>
  z.looseObject({
    index: z.number().nullish(),
    id: z.string().nullish(),
    type: z.string().nullish(),
    function: z
      .looseObject({
        name: z.string().nullish(),
        // A few servers send the whole arguments object instead of JSON text.
        arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
      })
      .nullish(),
  }),
);

const TextSchema = lazySchema(() =>
  z.union([z.string(), z.array(z.looseObject({ text: z.string().nullish() }))]).nullish(),
);

export const ChunkSchema = lazySchema(() =>
  z.looseObject({
    id: z.string().nullish(),
    choices: z
      .array(
        z.looseObject({
          index: z.number().nullish(),
          delta: z
            .looseObject({
              content: TextSchema,
              reasoning_content: z.string().nullish(),
              reasoning: z.string().nullish(),
              tool_calls: z.array(ToolCallDeltaSchema).nullish(),
            })
            .nullish(),
          finish_reason: z.string().nullish(),
        }),
      )
      .nullish(),
    usage: z
      .looseObject({
        prompt_tokens: z.number(),
        completion_tokens: z.number(),
        total_tokens: z.number().nullish(),
        prompt_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
      })
      .nullish(),
    error: z.union([ErrorSchema, z.string()]).nullish(),
  }),
);

/**
 * The schemas of a chat completions stream, by the names of their generated checks
 * (npm run build:validators writes them to chat-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, { chunk: ChunkSchema });

type ToolCallDelta = z.infer<typeof ToolCallDeltaSchema>;

interface PartialCall {
  id: string | undefined;
  name: string;
  arguments: string;
}

/** Rebuilds tool calls from fragments: by `index`, else by `id`, else as a continuation. */
export class ToolCallAssembler {
  readonly calls: PartialCall[] = [];
  private readonly byIndex = new Map<number, PartialCall>();

  push(fragments: ToolCallDelta[]): void {
    for (const f of fragments) {
      const call = this.slot(f);
      if (f.id && !call.id) call.id = f.id;
      const name = f.function?.name;
      // Names normally come whole in the first fragment; some servers repeat them.
      if (name && name !== call.name) call.name = call.name === "" ? name : call.name + name;
      const args = f.function?.arguments;
      if (typeof args === "string") call.arguments += args;
      else if (args) call.arguments = JSON.stringify(args);
    }
  }

  private slot(f: ToolCallDelta): PartialCall {
    if (typeof f.index === "number") {
      const existing = this.byIndex.get(f.index);
      // Some servers reuse index 0 for every parallel call; a new id means a new call.
      if (existing && !(f.id && existing.id && f.id !== existing.id)) return existing;
      const call = this.create();
      this.byIndex.set(f.index, call);
      return call;
    }
    if (f.id) return this.calls.find((c) => c.id === f.id) ?? this.create();
    return this.calls.at(-1) ?? this.create();
  }

  private create(): PartialCall {
    const call: PartialCall = { id: undefined, name: "", arguments: "" };
    this.calls.push(call);
    return call;
  }
}

export function chatUsage(u: NonNullable<z.infer<typeof ChunkSchema>["usage"]>): TokenUsage {
  const usage: TokenUsage = {
    input_tokens: u.prompt_tokens,
    output_tokens: u.completion_tokens,
    total_tokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens,
  };
  const cached = u.prompt_tokens_details?.cached_tokens;
  if (typeof cached === "number") usage.cached_input_tokens = cached;
  return usage;
}

type ChunkError = NonNullable<z.infer<typeof ChunkSchema>["error"]>;

/** What a chat completion stream has said so far, and the events each chunk makes. */
class ChatTurn {
  private text = "";
  private reasoning = "";
  private responseId: string | undefined;
  private usage: TokenUsage | undefined;
  finished = false;
  private readonly calls = new ToolCallAssembler();

  constructor(
    private readonly opts: Pick<TransportOptions, "baseUrl" | "model">,
    private readonly customTools: Set<string>,
  ) {}

  /** The whole items, then the completion. */
  *finish(): Generator<ModelEvent> {
    if (this.reasoning !== "")
      yield { type: "item", item: { type: "reasoning", summary: [{ type: "summary_text", text: this.reasoning }] } };
    if (this.text !== "")
      yield {
        type: "item",
        item: { type: "message", role: "assistant", content: [{ type: "output_text", text: this.text }] },
      };
    for (const c of this.calls.calls) {
      const callId = c.id || `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
      if (this.customTools.has(c.name))
        yield {
          type: "item",
          item: { type: "custom_tool_call", name: c.name, input: customInput(c.arguments), call_id: callId },
        };
      else
        yield {
          type: "item",
          item: {
            type: "function_call",
            name: c.name,
            arguments: c.arguments === "" ? "{}" : c.arguments,
            call_id: callId,
          },
        };
    }
    const done: ModelEvent = { type: "completed" };
    if (this.responseId) done.responseId = this.responseId;
    if (this.usage) done.usage = this.usage;
    yield done;
  }

  /** One chunk's deltas; its tool-call parts are kept for finish(). */
  *chunk(payload: unknown): Generator<ModelEvent> {
    const parsed = fastParse(ChunkSchema, payload);
    if (!parsed.success)
      throw new ModelError("stream", `Malformed chat completion chunk: ${z.prettifyError(parsed.error)}`);
    const chunk = parsed.data;
    if (chunk.error) throw chunkFailure(chunk.error, this.opts);
    if (chunk.id) this.responseId = chunk.id;
    if (chunk.usage) this.usage = chatUsage(chunk.usage);
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) return;
    const d = choice.delta;
    const content = typeof d?.content === "string" ? d.content : (d?.content ?? []).map((p) => p.text ?? "").join("");
    if (content) {
      this.text += content;
      yield { type: "text_delta", delta: content };
    }
    const thought = d?.reasoning_content ?? d?.reasoning;
    if (thought) {
      this.reasoning += thought;
      yield { type: "reasoning_delta", delta: thought };
    }
    if (d?.tool_calls) this.calls.push(d.tool_calls);
    if (choice.finish_reason) this.finished = true;
  }
}

/** An error a server sent inside the stream, as the error the session reports. */
function chunkFailure(error: ChunkError, opts: Pick<TransportOptions, "baseUrl" | "model">): Error {
  const e = typeof error === "string" ? { message: error } : error;
  const failure: { message: string; code?: string; type?: string } = { message: e.message ?? JSON.stringify(error) };
  if ("code" in e && e.code != null) failure.code = String(e.code);
  if ("type" in e && e.type) failure.type = e.type;
  return inStreamFailure(failure, opts);
}

function chunkPayloads(data: string): unknown[] {
  try {
    return jsonPayloads(data);
  } catch (e) {
    throw new ModelError("stream", `Malformed chat completion chunk: ${(e as Error).message}`);
  }
}

function parser(opts: Pick<TransportOptions, "baseUrl" | "model">, customTools: Set<string>) {
  return async function* parseChat(events: AsyncIterable<SseEvent>): AsyncGenerator<ModelEvent> {
    const turn = new ChatTurn(opts, customTools);
    for await (const sse of events) {
      for (const payload of chunkPayloads(sse.data)) {
        if (payload === "[DONE]") {
          yield* turn.finish();
          return;
        }
        yield* turn.chunk(payload);
      }
    }
    // Some servers end the stream after the finish reason without sending [DONE].
    if (!turn.finished) throw streamEndedEarly("its finish_reason and [DONE]");
    yield* turn.finish();
  };
}

function customInput(args: string): string {
  try {
    const v = JSON.parse(args);
    if (typeof v?.input === "string") return v.input;
  } catch {
    // not JSON: the model sent the raw input
  }
  return args;
}

export function createChatClient(opts: TransportOptions): ModelClient {
  return {
    provider: "openai-chat",
    preconnect: () => preconnectTransport(opts),
    stream(request: ModelRequest, signal?: AbortSignal): AsyncIterable<ModelEvent> {
      const transport = { ...opts, model: request.model || opts.model };
      const customTools = new Set(request.tools.filter((t) => t.kind === "custom").map((t) => t.name));
      return streamWithRetry(
        transport,
        "chat/completions",
        chatRequestBody({ ...request, model: transport.model }),
        parser(transport, customTools),
        signal,
      );
    },
  };
}
