/**
 * The lines of a run's events.jsonl: what the orchestrator appends (one JSON object a line, each
 * with `at` and `type`), defined once here. `relay infty logs` prints them and `relay infty serve`
 * streams them. Readers keep lines of a type they do not know (older or newer relays), so the
 * known shapes are checked only where a reader needs their fields.
 */
import { z } from "zod";
import type { SessionEvent } from "../contracts/events.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { redactSecrets } from "../util/redact.ts";
import { RoleActivitySchema } from "./activity.ts";

/** Longest text of a role's message or tool call kept in the log; the rollout has the whole. */
export const LOG_TEXT_MAX = 2000;

const clip = (s: string, max = LOG_TEXT_MAX) => (s.length > max ? `${s.slice(0, max)}…` : s);

/**
 * The fields of a log line that carry what a model or a person wrote (messages, tool calls,
 * summaries, prompts, verdict reasons, notes). The log is read by `relay infty logs` and shown
 * by the live view, often on another machine or in a screenshot, so secrets in them are
 * redacted as in memory files; ids, paths and counts are left alone (a commit id is not a secret).
 */
const TEXT_FIELDS = new Set(["text", "summary", "prompt", "directive", "rationale", "reasons", "detail"]);

/** `line` with its text fields (and those of a role's `event`) redacted. */
export function redactLogLine<T extends Record<string, unknown>>(line: T): T {
  const out: Record<string, unknown> = { ...line };
  for (const [key, value] of Object.entries(line)) {
    if (key === "event" && value !== null && typeof value === "object" && !Array.isArray(value))
      out[key] = redactLogLine(value as Record<string, unknown>);
    else if (!TEXT_FIELDS.has(key)) continue;
    else if (typeof value === "string") out[key] = redactSecrets(value);
    else if (Array.isArray(value)) out[key] = value.map((v) => (typeof v === "string" ? redactSecrets(v) : v));
  }
  return out as T;
}

/** What a role's session did, in the compact form the log keeps (see roleLogEvent). */
export const RoleLogEventSchema = lazySchema(() =>
  z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("turn_started") }),
    z.object({ kind: z.literal("turn_completed") }),
    z.object({ kind: z.literal("turn_aborted"), text: z.string() }),
    z.object({ kind: z.literal("message"), text: z.string() }),
    z.object({ kind: z.literal("tool_call"), name: z.string(), text: z.string() }),
    z.object({ kind: z.literal("tool_failed"), name: z.string(), text: z.string() }),
    z.object({ kind: z.literal("context_compacted"), text: z.string() }),
    z.object({ kind: z.literal("warning"), text: z.string() }),
    z.object({ kind: z.literal("error"), text: z.string() }),
  ]),
);
export type RoleLogEvent = z.infer<typeof RoleLogEventSchema>;

const base = { at: lazySchema(() => z.string()) };

/** Every line type the orchestrator writes. */
export const KnownLogEventSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    z.object({
      ...base,
      type: z.literal("run_started"),
      resumed: z.boolean(),
      pid: z.number().int().optional(),
      host: z.string().optional(),
      lease_epoch: z.number().int().optional(),
    }),
    /** The orchestrator committed the Solver's checkout to the run's branch (a run on a repository). */
    z.object({
      ...base,
      type: z.literal("commit"),
      commit: z.string(),
      branch: z.string(),
      reason: z.string(),
      changed: z.boolean(),
    }),
    z.object({ ...base, type: z.literal("role"), role: z.string(), event: RoleLogEventSchema }),
    z.object({ ...base, type: z.literal("handoff"), from: z.string(), to: z.string(), summary: z.string() }),
    z.object({ ...base, type: z.literal("direction_request"), prompt: z.string() }),
    z.object({ ...base, type: z.literal("directive"), directive: z.string(), rationale: z.string().nullable() }),
    z.object({
      ...base,
      type: z.literal("verdict"),
      role: z.string(),
      verdict: z.enum(["pass", "fail"]),
      reasons: z.array(z.string()),
      claim_path: z.string().optional(),
      final: z.boolean().optional(),
    }),
    z.object({
      ...base,
      type: z.literal("verification_summary"),
      overall: z.enum(["pass", "fail"]),
      passes: z.number().int(),
      total: z.number().int(),
    }),
    z.object({ ...base, type: z.literal("checkpoint"), name: z.string(), trigger: z.string(), summary: z.string() }),
    z.object({
      ...base,
      type: z.literal("heartbeat"),
      turns: z.number().int(),
      tokens_used: z.number().int(),
      roles: z.array(RoleActivitySchema),
    }),
    z.object({ ...base, type: z.literal("warning"), message: z.string() }),
    z.object({ ...base, type: z.literal("structured_output_unsupported"), role: z.string(), reason: z.string() }),
    z.object({
      ...base,
      type: z.literal("restored"),
      checkpoint: z.string(),
      commit: z.string(),
      side_files: z.array(z.string()),
    }),
    z.object({ ...base, type: z.literal("operator"), action: z.string(), text: z.string().optional() }),
    z.object({
      ...base,
      type: z.literal("pushed"),
      ok: z.boolean(),
      branch: z.string(),
      commit: z.string(),
      text: z.string(),
    }),
    z.object({
      ...base,
      type: z.literal("run_finished"),
      status: z.string(),
      detail: z.string(),
      tokens_used: z.number().int().optional(),
      roles: z.array(RoleActivitySchema).optional(),
    }),
  ]),
);
export type KnownLogEvent = z.infer<typeof KnownLogEventSchema>;
/** A known line without its time (the store adds it). */
export type LogEventInput = KnownLogEvent extends infer E ? (E extends { at: string } ? Omit<E, "at"> : never) : never;

/** Any line: an object with a type (known or not), or what an unreadable line becomes. */
export const LogLineSchema = lazySchema(() => z.looseObject({ type: z.string(), at: z.string().optional() }));
export type LogLine = z.infer<typeof LogLineSchema>;

/** A line as a reader gets it: parsed, or `unreadable` with its text (a line torn by a crash). */
export function parseLogLine(text: string): LogLine {
  try {
    const r = LogLineSchema.safeParse(JSON.parse(text));
    if (r.success) return r.data;
  } catch {
    // falls through
  }
  return { type: "unreadable", text: clip(text) };
}

/** The log's form of a session event, or undefined for those it does not keep (deltas, usage). */
export function roleLogEvent(e: SessionEvent): RoleLogEvent | undefined {
  switch (e.type) {
    case "turn_started":
      return { kind: "turn_started" };
    case "turn_completed":
      // Its final message came as an assistant_message already.
      return { kind: "turn_completed" };
    case "turn_aborted":
      return { kind: "turn_aborted", text: clip(e.reason) };
    case "assistant_message":
      return { kind: "message", text: clip(e.text) };
    case "tool_call":
      return { kind: "tool_call", name: e.name, text: clip(e.display, 500) };
    case "tool_result":
      return e.success ? undefined : { kind: "tool_failed", name: e.name, text: clip(e.output, 500) };
    case "context_compacted":
      return {
        kind: "context_compacted",
        text: `${e.items_before} items → ${e.items_after}${e.fallback ? " (fallback)" : ""}`,
      };
    case "warning":
      return { kind: "warning", text: clip(e.message) };
    case "error":
      return { kind: "error", text: clip(`${e.code}: ${e.message}`) };
    default:
      return undefined;
  }
}
