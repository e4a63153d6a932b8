/**
 * Rollout lines, in the same JSONL format Codex writes, so either tool reads the other's
 * sessions: `{"timestamp": "...Z", "type": "<kind>", "payload": {...}}` per line.
 * Optional fields accept `null` (Codex writes unset options as null) and objects keep unknown
 * keys, so newer or older Codex files parse. Line types we do not know are kept, not rejected.
 */
import { z } from "zod";
import { type ResponseItem, ResponseItemSchema } from "../model/items.ts";
import { fastParse, withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./schema-checks.generated.ts";

export const GitInfoSchema = lazySchema(() =>
  z.looseObject({
    commit_hash: z.string().nullish(),
    branch: z.string().nullish(),
    repository_url: z.string().nullish(),
  }),
);
export type GitInfo = z.infer<typeof GitInfoSchema>;

/** Relay writes one of these strings; Codex may also write other strings or an object (sub-agents). */
export const RELAY_SESSION_SOURCES = ["cli", "exec", "subagent", "infty"] as const;

/** The source of an infty run's role sessions: driven by their run, left out of `relay run`'s choices. */
export const INFTY_SOURCE = "infty";

/** Whether a session is an infty run's role (its run drives it, not `relay run`). */
export function isRoleSession(meta: { source?: unknown; infty?: unknown }): boolean {
  return meta.source === INFTY_SOURCE || (meta.infty !== undefined && meta.infty !== null);
}

/** What to tell someone who wants to continue a role session with `relay run`. */
export function roleSessionRefusal(meta: { id: string; infty?: { run_id: string; role: string } | null }): string {
  if (meta.infty)
    return `session ${meta.id} is the ${meta.infty.role} of infty run ${meta.infty.run_id}; its run drives it: relay infty resume ${meta.infty.run_id}`;
  return `session ${meta.id} is a role of an infty run, which drives it: find the run with relay infty list and continue it with relay infty resume <run-id>`;
}
export type RelaySessionSource = (typeof RELAY_SESSION_SOURCES)[number];
export const SessionSourceSchema = lazySchema(() => z.union([z.string(), z.record(z.string(), z.unknown())]));

export const SessionMetaSchema = lazySchema(() =>
  z.preprocess(
    // Older files used `session_id` for the thread id.
    (v) => {
      if (v && typeof v === "object" && !("id" in v) && "session_id" in v) {
        return { ...(v as Record<string, unknown>), id: (v as Record<string, unknown>).session_id };
      }
      return v;
    },
    z.looseObject({
      id: z.string().min(1),
      timestamp: z.string(),
      cwd: z.string(),
      originator: z.string(),
      cli_version: z.string(),
      source: SessionSourceSchema,
      model_provider: z.string().nullish(),
      base_instructions: z.looseObject({ text: z.string() }).nullish(),
      forked_from_id: z.string().nullish(),
      /** Relay's own: the source rollout of a fork (`relay run --fork`), and how many lines it had then. */
      forked_from_path: z.string().nullish(),
      forked_from_lines: z.number().int().nonnegative().nullish(),
      git: GitInfoSchema.nullish(),
      /** Relay's own: the infty run and role this session belongs to (source "infty"). */
      infty: z.looseObject({ run_id: z.string(), role: z.string() }).nullish(),
    }),
  ),
);
export type SessionMeta = z.infer<typeof SessionMetaSchema>;

/** A policy is a string in most builds, an object in some; keep whatever was written. */
const PolicySchema = lazySchema(() => z.union([z.string(), z.looseObject({})]));

export const TurnContextSchema = lazySchema(() =>
  z.looseObject({
    turn_id: z.string().nullish(),
    cwd: z.string(),
    approval_policy: PolicySchema,
    sandbox_policy: PolicySchema,
    model: z.string(),
    effort: z.string().nullish(),
    summary: z.unknown().optional(),
  }),
);
export type TurnContext = z.infer<typeof TurnContextSchema>;

export const CompactedSchema = lazySchema(() =>
  z.preprocess(
    // Legacy files stored the window number in `window_id`.
    (v) => {
      if (v && typeof v === "object" && typeof (v as Record<string, unknown>).window_id === "number") {
        const { window_id, ...rest } = v as Record<string, unknown>;
        return { window_number: window_id, ...rest };
      }
      return v;
    },
    z.looseObject({
      message: z.string(),
      replacement_history: z.array(ResponseItemSchema).nullish(),
      window_number: z.number().nullish(),
      window_id: z.string().nullish(),
      first_window_id: z.string().nullish(),
      previous_window_id: z.string().nullish(),
    }),
  ),
);
export type Compacted = z.infer<typeof CompactedSchema>;

export const EventMsgSchema = lazySchema(() => z.looseObject({ type: z.string() }));
export type EventMsg = z.infer<typeof EventMsgSchema>;

const envelope = {
  /** UTC ISO-8601 with milliseconds and `Z`. */
  timestamp: lazySchema(() => z.string()),
  ordinal: lazySchema(() => z.number().nullish()),
};

export const SessionMetaLineSchema = lazySchema(() =>
  z.object({ ...envelope, type: z.literal("session_meta"), payload: SessionMetaSchema }),
);
export const ResponseItemLineSchema = lazySchema(() =>
  z.object({ ...envelope, type: z.literal("response_item"), payload: ResponseItemSchema }),
);
export const EventMsgLineSchema = lazySchema(() =>
  z.object({ ...envelope, type: z.literal("event_msg"), payload: EventMsgSchema }),
);
export const TurnContextLineSchema = lazySchema(() =>
  z.object({ ...envelope, type: z.literal("turn_context"), payload: TurnContextSchema }),
);
export const CompactedLineSchema = lazySchema(() =>
  z.object({ ...envelope, type: z.literal("compacted"), payload: CompactedSchema }),
);
/** Any other line type (world_state, inter_agent_communication, ...): kept, ignored by readers. */
export const UnknownLineSchema = lazySchema(() => z.object({ ...envelope, type: z.string(), payload: z.unknown() }));

/**
 * The schemas of rollout lines, by the names of their generated checks (npm run build:validators
 * writes them to schema-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, {
  unknownLine: UnknownLineSchema,
  sessionMetaLine: SessionMetaLineSchema,
  responseItemLine: ResponseItemLineSchema,
  eventMsgLine: EventMsgLineSchema,
  turnContextLine: TurnContextLineSchema,
  compactedLine: CompactedLineSchema,
});

export type SessionMetaLine = z.infer<typeof SessionMetaLineSchema>;
export type ResponseItemLine = Omit<z.infer<typeof ResponseItemLineSchema>, "payload"> & { payload: ResponseItem };
export type EventMsgLine = z.infer<typeof EventMsgLineSchema>;
export type TurnContextLine = z.infer<typeof TurnContextLineSchema>;
export type CompactedLine = z.infer<typeof CompactedLineSchema>;
export type UnknownLine = z.infer<typeof UnknownLineSchema>;

export type KnownRolloutLine = SessionMetaLine | ResponseItemLine | EventMsgLine | TurnContextLine | CompactedLine;
export type RolloutLine = KnownRolloutLine | UnknownLine;
export type KnownLineType = KnownRolloutLine["type"];

const KNOWN_SCHEMAS = {
  session_meta: SessionMetaLineSchema,
  response_item: ResponseItemLineSchema,
  event_msg: EventMsgLineSchema,
  turn_context: TurnContextLineSchema,
  compacted: CompactedLineSchema,
} as const satisfies Record<KnownLineType, z.ZodType>;

export function isKnownLineType(type: string): type is KnownLineType {
  return Object.hasOwn(KNOWN_SCHEMAS, type);
}

/** Validates one decoded JSON line: the envelope first, then the payload for known types. */
export function parseRolloutLine(value: unknown): { ok: RolloutLine } | { error: string } {
  const env = fastParse(UnknownLineSchema, value);
  if (!env.success) return { error: `not a rollout line (${summarize(env.error, value)})` };
  const type = env.data.type;
  if (!isKnownLineType(type)) return { ok: env.data };
  const r = fastParse(KNOWN_SCHEMAS[type], value);
  if (!r.success) return { error: `invalid ${type} line (${summarize(r.error, value)})` };
  return { ok: r.data as KnownRolloutLine };
}

function summarize(e: z.ZodError, value: unknown): string {
  const parts = e.issues.slice(0, 3).map((i) => {
    const key = i.path.map(String).join(".") || "line";
    let cur: unknown = value;
    for (const k of i.path)
      cur = cur !== null && typeof cur === "object" ? (cur as Record<PropertyKey, unknown>)[k] : undefined;
    return cur === undefined && i.path.length ? `${key} is missing` : `${key}: ${i.message}`;
  });
  if (e.issues.length > 3) parts.push(`${e.issues.length - 3} more`);
  return parts.join("; ");
}
