/** The one interface every model provider implements (Responses, Chat Completions, scripted). */
import { z } from "zod";
import type { TokenUsage } from "../contracts/usage.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import type { ResponseItem } from "./items.ts";

/** A tool as offered to the model. `function` tools take JSON; `custom` tools take raw text. */
export const ModelToolSchema = lazySchema(() =>
  z.object({
    kind: z.enum(["function", "custom"]),
    name: z.string(),
    description: z.string(),
    /** JSON schema of the arguments (function tools only). */
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
);
export type ModelTool = z.infer<typeof ModelToolSchema>;

/**
 * A strict structured-output request: the model's messages must be JSON matching `schema` (a
 * JSON schema in the strict subset: every property required, no extra properties).
 */
export const OutputSchemaSchema = lazySchema(() =>
  z.object({ name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/), schema: z.record(z.string(), z.unknown()) }),
);
export type OutputSchema = z.infer<typeof OutputSchemaSchema>;

export interface ModelRequest {
  model: string;
  /** System/base instructions. */
  instructions: string;
  input: ResponseItem[];
  tools: ModelTool[];
  parallelToolCalls: boolean;
  outputSchema?: OutputSchema;
}

/** What a provider streams back for one request. Exactly one `completed` ends a good stream. */
export type ModelEvent =
  | { type: "text_delta"; delta: string }
  | { type: "reasoning_delta"; delta: string }
  /** A whole output item (assistant message, function_call, reasoning...), in output order. */
  | { type: "item"; item: ResponseItem }
  | { type: "completed"; responseId?: string; usage?: TokenUsage }
  /**
   * Retrying after a transient failure (retry `attempt` of at most `maxRetries`). With
   * `discardPartial`, the failed attempt had streamed deltas (no whole item): drop them, the
   * retry streams the answer again from the start.
   */
  | {
      type: "retrying";
      attempt: number;
      maxRetries: number;
      delayMs: number;
      reason: string;
      discardPartial?: boolean;
    };

/** Errors a provider reports; `retryable` ones were already retried as configured. */
export class ModelError extends Error {
  override readonly name = "ModelError";
  constructor(
    readonly code:
      | "auth"
      | "model_not_found"
      | "rate_limited"
      | "server"
      | "stream"
      | "bad_request"
      | "context_window"
      | "network"
      | "script",
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface ModelClient {
  /** Human-readable provider name, e.g. "openai-responses". */
  readonly provider: string;
  /** Streams one response. Throws ModelError when it gives up. */
  stream(request: ModelRequest, signal?: AbortSignal): AsyncIterable<ModelEvent>;
  /** Opens the connection the first request will take, in the background (model/preconnect.ts). */
  preconnect?(): void;
}
