/**
 * Wire contract of `relay code-mode-host`: the generation-1 code-mode host protocol carried in
 * Relay's own framing (4-byte big-endian length + JSON, 16 MiB) and RpcPeer envelope, so every
 * request has the peer's u64 id and every answer is a Result value. Mapping:
 *
 *   Request{id, CreateSession}                 -> request codemode/create_session -> {session_id}
 *   Request{id, Execute{session_id, request}}  -> request codemode/execute -> {cell_id, execute_id, initial?, closed?} (ExecutionStarted)
 *   InitialResponse{id, response}              -> `initial` in that answer when the script ended or yielded before it left;
 *                                                 else notification codemode/initial_response {id = the execute request id, ...}
 *   Request{id, Wait | Terminate}              -> codemode/wait, codemode/terminate -> {outcome: WaitOutcome} (WaitCompleted)
 *   Request{id, ShutdownSession}               -> codemode/shutdown_session -> {shutdown: true} (SessionShutdown)
 *   DelegateRequest{InvokeTool | Notify}       -> host->client requests codemode/invoke_tool, codemode/notify
 *   DelegateResponse{id, ...}                  -> the response to those requests
 *   CancelDelegateRequest{id}                  -> the peer's {type: "cancel", id} envelope
 *   CellClosed{session_id, cell_id}            -> `closed: true` in the execute answer, else notification codemode/cell_closed
 *   Response{Err: text}                        -> {error: {code, message}} (e.g. unknown_session)
 *
 * Inner payloads keep the reference shapes: RuntimeResponse / WaitOutcome externally tagged
 * (`{Yielded: {...}}`, `{LiveCell: ...}`), content items `{type: "input_text", text}`.
 * `codemode/hello` is Relay's own readiness probe.
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { ErrorValueSchema } from "../util/result-schema.ts";
import * as checks from "./code-mode-checks.generated.ts";
import { RequestIdSchema } from "./envelope.ts";
import { defineMethod, defineNotification, specSchemas } from "./method.ts";

/** How long an `exec` waits for its first yield when the request names no time. */
export const DEFAULT_EXEC_YIELD_TIME_MS = 10_000;

export const CellIdSchema = lazySchema(() => z.string().min(1));
export type CellId = z.infer<typeof CellIdSchema>;
/** Minted by the host (1, 2, ...): a plain number, unlike request ids (u64, see envelope.ts). */
export const SessionIdSchema = lazySchema(() => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER));

export const ContentItemSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("input_text"), text: z.string() }),
    z.object({
      type: z.literal("input_image"),
      image_url: z.string(),
      detail: z.enum(["auto", "low", "high", "original"]).optional(),
    }),
  ]),
);
export type ContentItem = z.infer<typeof ContentItemSchema>;

const CellItems = lazySchema(() => z.object({ cell_id: CellIdSchema, content_items: z.array(ContentItemSchema) }));
export const RuntimeResponseSchema = lazySchema(() =>
  z.union([
    z.object({ Yielded: CellItems }).strict(),
    z.object({ Terminated: CellItems }).strict(),
    z.object({ Result: CellItems.extend({ error_text: z.string().nullable() }) }).strict(),
  ]),
);
export type RuntimeResponse = z.infer<typeof RuntimeResponseSchema>;

export const WaitOutcomeSchema = lazySchema(() =>
  z.union([
    z.object({ LiveCell: RuntimeResponseSchema }).strict(),
    z.object({ MissingCell: RuntimeResponseSchema }).strict(),
  ]),
);
export type WaitOutcome = z.infer<typeof WaitOutcomeSchema>;

export const ToolDefinitionSchema = lazySchema(() =>
  z.object({
    name: z.string().min(1),
    description: z.string().default(""),
    kind: z.enum(["function", "freeform"]).default("function"),
  }),
);
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/** Per-session limits; the host clamps them to its own maxima. */
export const SessionLimitsSchema = lazySchema(() =>
  z.object({
    memory_limit_bytes: z
      .number()
      .int()
      .min(1 << 20)
      .max(2 ** 31)
      .optional(),
    cpu_limit_ms: z.number().int().min(1).max(3_600_000).optional(),
  }),
);
export type SessionLimits = z.infer<typeof SessionLimitsSchema>;

export const ExecuteRequestSchema = lazySchema(() =>
  z.object({
    tool_call_id: z.string(),
    enabled_tools: z.array(ToolDefinitionSchema).default([]),
    source: z.string(),
    yield_time_ms: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
  }),
);
export type ExecuteRequest = z.input<typeof ExecuteRequestSchema>;

export const NestedToolCallSchema = lazySchema(() =>
  z.object({
    session_id: SessionIdSchema,
    cell_id: CellIdSchema,
    call_id: z.string(),
    runtime_tool_call_id: z.string(),
    tool_name: z.string(),
    tool_kind: z.enum(["function", "freeform"]),
    input: z.unknown(),
  }),
);
export type NestedToolCall = z.infer<typeof NestedToolCallSchema>;

export const NotifySchema = lazySchema(() =>
  z.object({ session_id: SessionIdSchema, call_id: z.string(), cell_id: CellIdSchema, text: z.string() }),
);
export type NotifyParams = z.infer<typeof NotifySchema>;

export const CodeModeMethods = {
  /** Readiness probe: answered once the QuickJS module is loaded; `await_warmup` first warms the JIT (pool hosts). */
  hello: defineMethod(
    "codemode/hello",
    lazySchema(() => z.object({ await_warmup: z.boolean().optional() })),
    /** control_dir: a file `<session_id>-<cell_id>` there asks a CPU-bound cell to stop. */
    lazySchema(() =>
      z.object({
        pid: z.number().int(),
        sessions: z.number().int(),
        warm: z.boolean(),
        control_dir: z.string().optional(),
        /** Prepared and used QuickJS VMs; `settled` when housekeeping has nothing left to do. */
        vms: z.object({ spares: z.number().int(), used: z.number().int(), settled: z.boolean() }).optional(),
      }),
    ),
    [],
  ),
  createSession: defineMethod(
    "codemode/create_session",
    lazySchema(() => z.object({ limits: SessionLimitsSchema.optional() })),
    lazySchema(() => z.object({ session_id: SessionIdSchema })),
    ["shutting_down"],
  ),
  execute: defineMethod(
    "codemode/execute",
    lazySchema(() => z.object({ session_id: SessionIdSchema, request: ExecuteRequestSchema })),
    /**
     * ExecutionStarted; `execute_id` echoes the request id an initial_response would carry. A script
     * that ends or yields before this answer leaves has its first response folded in (`initial`,
     * and `closed` when the cell is over): then neither notification follows.
     */
    lazySchema(() =>
      z.object({
        cell_id: CellIdSchema,
        execute_id: RequestIdSchema,
        initial: RuntimeResponseSchema.optional(),
        closed: z.literal(true).optional(),
      }),
    ),
    ["unknown_session", "shutting_down", "busy_observer", "runtime"],
  ),
  wait: defineMethod(
    "codemode/wait",
    lazySchema(() =>
      z.object({
        session_id: SessionIdSchema,
        request: z.object({
          cell_id: CellIdSchema,
          yield_time_ms: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
        }),
      }),
    ),
    lazySchema(() => z.object({ outcome: WaitOutcomeSchema })),
    ["unknown_session", "busy_observer"],
  ),
  terminate: defineMethod(
    "codemode/terminate",
    lazySchema(() => z.object({ session_id: SessionIdSchema, cell_id: CellIdSchema })),
    lazySchema(() => z.object({ outcome: WaitOutcomeSchema })),
    ["unknown_session"],
  ),
  shutdownSession: defineMethod(
    "codemode/shutdown_session",
    lazySchema(() => z.object({ session_id: SessionIdSchema })),
    lazySchema(() => z.object({ shutdown: z.literal(true) })),
    ["unknown_session"],
  ),
  /** host -> client: run one nested tool call; an error result rejects the JS promise with its message. */
  invokeTool: defineMethod(
    "codemode/invoke_tool",
    NestedToolCallSchema,
    lazySchema(() => z.object({ result: z.unknown() })),
    ["unknown_session", "tool_failed"],
  ),
  /** host -> client: deliver `notify(text)` out of band. */
  notify: defineMethod(
    "codemode/notify",
    NotifySchema,
    lazySchema(() => z.object({ delivered: z.literal(true) })),
    [],
  ),
} as const;

export const CodeModeNotifications = {
  /** host -> client: first yield/result/termination of the cell started by request `id`. */
  initialResponse: defineNotification(
    "codemode/initial_response",
    lazySchema(() =>
      z.object({
        id: RequestIdSchema,
        session_id: SessionIdSchema,
        cell_id: CellIdSchema,
        response: z.union([
          z.object({ ok: RuntimeResponseSchema }).strict(),
          z.object({ error: ErrorValueSchema }).strict(),
        ]),
      }),
    ),
  ),
  cellClosed: defineNotification(
    "codemode/cell_closed",
    lazySchema(() => z.object({ session_id: SessionIdSchema, cell_id: CellIdSchema })),
  ),
} as const;

/**
 * The schemas a code-mode peer reads off the wire, by the names of their generated checks
 * (npm run build:validators writes them to protocol-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, {
  ...specSchemas(CodeModeMethods),
  ...specSchemas(CodeModeNotifications),
  // Parts of several messages: each is one function the messages' checks call.
  runtimeResponse: RuntimeResponseSchema,
  waitOutcome: WaitOutcomeSchema,
});

export const CodeModeErrorCode = {
  UnknownSession: "unknown_session",
  ShuttingDown: "shutting_down",
  HostDied: "code_mode_host_died",
  Runtime: "runtime",
} as const;

export function cellOf(r: RuntimeResponse): { cell_id: string; content_items: ContentItem[] } {
  return "Yielded" in r ? r.Yielded : "Terminated" in r ? r.Terminated : r.Result;
}

/** What waiting on an unknown (or already finished and collected) cell returns. */
export function missingCell(cellId: string): RuntimeResponse {
  return { Result: { cell_id: cellId, content_items: [], error_text: `exec cell ${cellId} not found` } };
}
