/** OpenAI Responses API client: `POST {baseUrl}/responses` with `stream: true`, `store: false`. */
import { z } from "zod";
import type { TokenUsage } from "../contracts/usage.ts";
import { fastParse, withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { type ModelClient, ModelError, type ModelEvent, type ModelRequest, type ModelTool } from "./client.ts";
import {
  inStreamFailure,
  preconnectTransport,
  streamEndedEarly,
  streamWithRetry,
  type TransportOptions,
} from "./http.ts";
import { type ResponseItem, ResponseItemSchema } from "./items.ts";
import * as checks from "./responses-checks.generated.ts";
import { jsonPayloads, type SseEvent } from "./sse.ts";
import { wireItems } from "./wire-items.ts";

export const ReasoningOptionsSchema = lazySchema(() =>
  z.object({
    /** e.g. "minimal", "low", "medium", "high"; models differ, so any word passes. */
    effort: z.string().min(1).optional(),
    summary: z.enum(["auto", "concise", "detailed"]).optional(),
  }),
);
export type ReasoningOptions = z.infer<typeof ReasoningOptionsSchema>;

export interface ResponsesClientOptions extends TransportOptions {
  /** Sent as `reasoning`; also asks for encrypted reasoning so it can be replayed with store=false. */
  reasoning?: ReasoningOptions;
}

export const ResponsesToolSchema = lazySchema(() =>
  z.union([
    z.object({
      type: z.literal("function"),
      name: z.string(),
      description: z.string(),
      parameters: z.record(z.string(), z.unknown()),
      strict: z.boolean(),
    }),
    z.object({ type: z.literal("custom"), name: z.string(), description: z.string() }),
  ]),
);

export const ResponsesRequestBodySchema = lazySchema(() =>
  z.object({
    model: z.string(),
    instructions: z.string(),
    input: z.array(z.record(z.string(), z.unknown())),
    tools: z.array(ResponsesToolSchema),
    tool_choice: z.literal("auto"),
    parallel_tool_calls: z.boolean(),
    stream: z.literal(true),
    store: z.literal(false),
    reasoning: ReasoningOptionsSchema.optional(),
    include: z.array(z.string()).optional(),
    text: z
      .object({
        format: z.object({
          type: z.literal("json_schema"),
          name: z.string(),
          schema: z.record(z.string(), z.unknown()),
          strict: z.literal(true),
        }),
      })
      .optional(),
  }),
);
export type ResponsesRequestBody = z.infer<typeof ResponsesRequestBodySchema>;

export function responsesTool(tool: ModelTool): z.infer<typeof ResponsesToolSchema> {
  if (tool.kind === "custom") return { type: "custom", name: tool.name, description: tool.description };
  return {
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters ?? { type: "object", properties: {} },
    strict: false,
  };
}

/** History items as request input: only what the Responses API takes (see wire-items.ts). */
export function responsesInput(items: ResponseItem[]): Record<string, unknown>[] {
  return wireItems(items) as Record<string, unknown>[];
}

export function responsesRequestBody(request: ModelRequest, reasoning?: ReasoningOptions): ResponsesRequestBody {
  const body: ResponsesRequestBody = {
    model: request.model,
    instructions: request.instructions,
    input: responsesInput(request.input),
    tools: request.tools.map(responsesTool),
    tool_choice: "auto",
    parallel_tool_calls: request.parallelToolCalls,
    stream: true,
    store: false,
  };
  if (request.outputSchema)
    body.text = {
      format: {
        type: "json_schema",
        name: request.outputSchema.name,
        schema: request.outputSchema.schema,
        strict: true,
      },
    };
  if (reasoning) {
    body.reasoning = reasoning;
    body.include = ["reasoning.encrypted_content"];
  }
  return body;
}

const UsageSchema = lazySchema(() =>
  z.looseObject({
    input_tokens: z.number(),
    output_tokens: z.number(),
    total_tokens: z.number().optional(),
    input_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
  }),
);

const ErrorSchema = lazySchema(() =>
  z.looseObject({ code: z.string().nullish(), message: z.string().nullish(), type: z.string().nullish() }),
);

const ResponseObjectSchema = lazySchema(() =>
  z.looseObject({
    id: z.string().optional(),
    usage: UsageSchema.nullish(),
    error: ErrorSchema.nullish(),
    incomplete_details: z.looseObject({ reason: z.string().nullish() }).nullish(),
  }),
);

/** The parts of Responses stream events that Relay reads; everything else passes unchecked. */
export const StreamEventSchema = lazySchema(() =>
  z.looseObject({
    type: z.string().optional(),
    delta: z.string().optional(),
    item: z.unknown().optional(),
    response: ResponseObjectSchema.optional(),
    code: z.string().nullish(),
    message: z.string().nullish(),
    error: ErrorSchema.nullish(),
  }),
);

/**
 * The schemas of a Responses stream, by the names of their generated checks
 * (npm run build:validators writes them to responses-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, { streamEvent: StreamEventSchema });

export function responsesUsage(u: z.infer<typeof UsageSchema>): TokenUsage {
  const usage: TokenUsage = {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    total_tokens: u.total_tokens ?? u.input_tokens + u.output_tokens,
  };
  const cached = u.input_tokens_details?.cached_tokens;
  if (typeof cached === "number") usage.cached_input_tokens = cached;
  return usage;
}

function parser(opts: Pick<TransportOptions, "baseUrl" | "model">) {
  return async function* parseResponses(events: AsyncIterable<SseEvent>): AsyncGenerator<ModelEvent> {
    let responseId: string | undefined;
    for await (const sse of events) {
      let payloads: unknown[];
      try {
        payloads = jsonPayloads(sse.data);
      } catch (e) {
        throw new ModelError("stream", `Malformed Responses stream event: ${(e as Error).message}`);
      }
      for (const payload of payloads) {
        if (payload === "[DONE]") continue;
        const parsed = fastParse(StreamEventSchema, payload);
        if (!parsed.success)
          throw new ModelError("stream", `Malformed Responses stream event: ${z.prettifyError(parsed.error)}`);
        const ev = parsed.data;
        switch (ev.type ?? sse.event) {
          case "response.created":
          case "response.in_progress":
            responseId = ev.response?.id ?? responseId;
            break;
          case "response.output_text.delta":
            if (ev.delta) yield { type: "text_delta", delta: ev.delta };
            break;
          case "response.reasoning_summary_text.delta":
          case "response.reasoning_text.delta":
            if (ev.delta) yield { type: "reasoning_delta", delta: ev.delta };
            break;
          case "response.output_item.done": {
            const item = fastParse(ResponseItemSchema, ev.item);
            if (!item.success)
              throw new ModelError("stream", `Malformed output item from the model: ${z.prettifyError(item.error)}`);
            yield { type: "item", item: item.data as ResponseItem };
            break;
          }
          case "response.completed": {
            const done: ModelEvent = { type: "completed" };
            const id = ev.response?.id ?? responseId;
            if (id) done.responseId = id;
            if (ev.response?.usage) done.usage = responsesUsage(ev.response.usage);
            yield done;
            return;
          }
          case "response.incomplete": {
            const reason = ev.response?.incomplete_details?.reason ?? "unknown reason";
            throw new ModelError("stream", `The model returned an incomplete response (${reason})`);
          }
          case "response.failed": {
            const e = ev.response?.error;
            throw inStreamFailure(
              { message: e?.message ?? "response.failed without a message", ...codeAndType(e) },
              opts,
            );
          }
          case "error": {
            const e = ev.error ?? ev;
            throw inStreamFailure({ message: e.message ?? JSON.stringify(payload), ...codeAndType(e) }, opts);
          }
          default:
            break;
        }
      }
    }
    throw streamEndedEarly("response.completed");
  };
}

function codeAndType(e: { code?: string | null; type?: string | null } | null | undefined): {
  code?: string;
  type?: string;
} {
  const out: { code?: string; type?: string } = {};
  if (e?.code) out.code = e.code;
  if (e?.type && e.type !== "error") out.type = e.type;
  return out;
}

export function createResponsesClient(opts: ResponsesClientOptions): ModelClient {
  return {
    provider: "openai-responses",
    preconnect: () => preconnectTransport(opts),
    stream(request: ModelRequest, signal?: AbortSignal): AsyncIterable<ModelEvent> {
      const transport = { ...opts, model: request.model || opts.model };
      return streamWithRetry(
        transport,
        "responses",
        responsesRequestBody({ ...request, model: transport.model }, opts.reasoning),
        parser(transport),
        signal,
      );
    },
  };
}
