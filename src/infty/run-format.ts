/**
 * run.json's format: the state of one run (its status, budgets, the pending step, the messages in
 * flight, the roles' sessions), the notes of memory/notes.jsonl, and the run's folders; read and
 * checked here, and refused before a write when invalid.
 */

import { readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { RoleNameSchema, RunSettingsSchema } from "../config/infty/index.ts";
import { MAX_TIMER_MS } from "../util/duration.ts";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, type Result } from "../util/result.ts";
import { describeIssues } from "../util/schema-issues.ts";
import { RoleActivitySchema } from "./activity.ts";
import { RepoRecordSchema } from "./repo/record.ts";

export const RUN_DIRS = ["artifacts", "memory", "index", "deliverable"] as const;

export const VerdictRecordSchema = lazySchema(() =>
  z.object({
    role: z.string(),
    verdict: z.enum(["pass", "fail"]),
    reasons: z.array(z.string()),
    suggestions: z.array(z.string()).default([]),
  }),
);

export const PendingSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    /** A message the Solver must receive next. */
    z.object({ type: z.literal("solver_message"), message: z.string() }),
    z.object({ type: z.literal("direction"), prompt: z.string() }),
    z.object({
      type: z.literal("verification"),
      claim_path: z.string(),
      notes: z.string().nullable(),
      final: z.boolean().default(false),
      /** A run on a repository: the commit of the run's branch under review. */
      commit: z.string().optional(),
      /** Verdicts already given: a resumed verification asks only the remaining Verifiers. */
      verdicts: z.array(VerdictRecordSchema).default([]),
    }),
  ]),
);
export type Pending = z.infer<typeof PendingSchema>;

/**
 * Write-ahead record of a message handed to a role whose answer has not been acted on yet. On
 * resume the role's rollout after `rollout_offset` tells what became of it: answered (the answer
 * is used, not asked for again), mid-turn (the turn is continued) or never recorded (sent again).
 * The transition that uses the answer clears it in the same write.
 */
export const InflightSchema = lazySchema(() =>
  z.object({
    role: RoleNameSchema,
    /** 2: the corrective retry after a malformed reply. */
    attempt: z.number().int().min(1).max(2),
    message: z.string(),
    /** Size of the role's rollout file when the message was sent. */
    rollout_offset: z.number().int().min(0),
  }),
);
export type Inflight = z.infer<typeof InflightSchema>;

/** The in-flight records of a run.json, in either of its shapes. */
export function inflightList(v: Inflight | Inflight[] | null): Inflight[] {
  return v === null ? [] : Array.isArray(v) ? v : [v];
}

/** The longest wall-clock budget `--max-wall` gives a run: a year (older runs may hold more). */
export const MAX_WALL_MS = 366 * 86_400_000;

export const RunStatusSchema = lazySchema(() =>
  z.enum(["running", "complete", "failed", "interrupted", "budget_exhausted"]),
);

export const RunMetaSchema = lazySchema(() =>
  z.object({
    run_id: z.string(),
    objective: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    heartbeat_at: z.string(),
    status: RunStatusSchema,
    status_detail: z.string().default(""),
    verifiers: z.number().int().min(0),
    consensus: z.enum(["all", "majority"]),
    roles: z.array(
      z.object({ role: RoleNameSchema, session_id: z.string().optional(), rollout_path: z.string().optional() }),
    ),
    /** Solver turns so far (the turn budget counts these). */
    turns: z.number().int().min(0),
    max_turns: z.number().int().min(1),
    /** Wall-clock budget over all attempts, in ms. */
    max_wall_ms: z.number().int().min(1),
    wall_ms_used: z.number().int().min(0),
    pending: PendingSchema.nullable(),
    /** One record per role with a message out (Verifiers are asked in parallel); older runs hold a single one. */
    inflight: z
      .union([InflightSchema, z.array(InflightSchema)])
      .nullable()
      .default(null),
    /** Transitions so far; notes carry it, so a transition replayed after a crash adds none twice. */
    handoffs: z.number().int().min(0).default(0),
    /** The accepted delivery; on a repository also the branch and the commit the Verifiers passed. */
    deliverable: z
      .object({
        path: z.string(),
        summary: z.string().nullable(),
        branch: z.string().optional(),
        commit: z.string().optional(),
      })
      .nullable(),
    /** The id of the newest checkpoint (or the one a restore went back to). */
    last_checkpoint: z.string().nullable(),
    /** When the Verifiers last passed a claim; a delivery is only accepted after one. */
    verified_at: z.string().nullable().default(null),
    next_note: z.number().int().min(1),
    /** Tokens all roles have used (every model request's total), and the budget for them. */
    tokens_used: z.number().int().min(0).default(0),
    max_tokens: z.number().int().min(1).nullable().default(null),
    /** What each role was doing at the last heartbeat (`relay infty status` shows it). */
    activity: z.array(RoleActivitySchema).default([]),
    /** Roles whose model server refused structured output: their turns carry the contract in the prompt only. */
    prompt_only_roles: z.array(RoleNameSchema).default([]),
    /** What the roles' sessions ran with, so `relay infty resume` continues the same way. */
    settings: RunSettingsSchema.optional(),
    /** Notes from memory/operator-notes.jsonl the Director has been sent (operator.ts). */
    operator_notes_delivered: z.number().int().min(0).default(0),
    /** The repository the run works on (its own branch and checkout); absent: the run store only. */
    repo: RepoRecordSchema.optional(),
    /** How long a Director or Verifier may take for one answer; older runs: the default. */
    role_timeout_ms: z.number().int().min(1_000).max(MAX_TIMER_MS).optional(),
  }),
);
export type RunMeta = z.infer<typeof RunMetaSchema>;

export const NoteSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    at: z.string(),
    role: z.string(),
    kind: z.string(),
    text: z.string(),
    handoff: z.number().int().min(0).optional(),
  }),
);
export type Note = z.infer<typeof NoteSchema>;

/** The run.json of the run in `dir`, read and checked; never written. */
export async function readRunMeta(dir: string): Promise<Result<RunMeta>> {
  const file = path.join(dir, "run.json");
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    return err("run_not_found", `${file} cannot be read (${(e as Error).message})`);
  }
  return parseJsonWith(RunMetaSchema, text, file, {
    code: "run_corrupt",
    invalid: "does not match the run format",
    note: "the run's files are untouched",
    fix: `Fix: correct {fields} in ${file} as said above (relay writes only valid values: a hand edit or another tool changed it), then run the command again.`,
  });
}

/** `meta` if run.json may hold it; a bug otherwise: thrown, so nothing invalid is ever written. */
export function validMeta(meta: RunMeta): RunMeta {
  const r = RunMetaSchema.safeParse(meta);
  if (!r.success)
    throw new Error(
      `refusing to write an invalid run.json: ${describeIssues(r.error.issues, meta, { objectName: "an object" })
        .map((i) => i.message)
        .join("; ")}`,
    );
  return meta;
}
