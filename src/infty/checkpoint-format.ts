/**
 * The file formats of checkpoints: what a checkpoint commit says about itself (its message),
 * what it records to rewind a run (checkpoint.json in its tree), and the restore intent record
 * that makes a restore finishable after a crash. Defined once here; checkpoints.ts and
 * restore.ts read and write them.
 */
import { z } from "zod";
import { RoleNameSchema } from "../config/infty/index.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { RunMetaSchema } from "./run-format.ts";

/** Where the checkpoints' git repository lives inside a run (see docs/infty.md). */
export const CHECKPOINT_GITDIR = ".checkpoints.git";
/** The branch every checkpoint is committed on, one after another. */
export const CHECKPOINT_REF = "refs/heads/checkpoints";
/** The folders of the run store a checkpoint holds, and a restore puts back. */
export const CHECKPOINT_DIRS = ["artifacts", "memory", "index", "deliverable"] as const;
/** The record's name at the root of a checkpoint's tree (beside the four folders). */
export const RECORD_FILE = "checkpoint.json";
/** Written before a restore changes anything; removed when it is done. */
export const RESTORE_INTENT_FILE = "restore-intent.json";

export const CheckpointIdSchema = lazySchema(() =>
  z.string().regex(/^ckpt-\d{4,}$/, "a checkpoint id looks like ckpt-0003"),
);

/** resume: a step no checkpoint holds yet (a crash came between its handoff and its checkpoint, or a restore went back). */
export const CheckpointTriggerSchema = lazySchema(() => z.enum(["handoff", "verification_pass", "delivery", "resume"]));
export type CheckpointTrigger = z.infer<typeof CheckpointTriggerSchema>;

/** What `relay infty checkpoints` lists; also the JSON body of the commit message. */
export const CheckpointInfoSchema = lazySchema(() =>
  z.object({
    id: CheckpointIdSchema,
    seq: z.number().int().min(1),
    at: z.string(),
    trigger: CheckpointTriggerSchema,
    /** The handoff's own summary ("solver → verifiers: memory/claims/a.json"). */
    summary: z.string(),
    /** Solver turns so far. */
    turn: z.number().int().min(0),
    handoff: z.number().int().min(0),
    /** A run on a repository: the head of the run's branch then (a restore rewinds the branch to it). */
    repo_commit: z.string().optional(),
  }),
);
export type CheckpointInfo = z.infer<typeof CheckpointInfoSchema>;

/** The part of run.json a restore puts back; the rest (id, objective, budgets, settings, roles) stays. */
export const RestorableStateSchema = lazySchema(() =>
  RunMetaSchema.pick({
    pending: true,
    turns: true,
    handoffs: true,
    deliverable: true,
    verified_at: true,
    next_note: true,
    status: true,
    status_detail: true,
  }),
);
export type RestorableState = z.infer<typeof RestorableStateSchema>;

/** A role's rollout at the checkpoint: a restore truncates the file to `bytes`. */
export const RolloutMarkSchema = lazySchema(() =>
  z.object({ role: RoleNameSchema, path: z.string(), bytes: z.number().int().min(0), lines: z.number().int().min(0) }),
);
export type RolloutMark = z.infer<typeof RolloutMarkSchema>;

export const CheckpointRecordSchema = lazySchema(() =>
  CheckpointInfoSchema.extend({
    version: z.literal(1),
    state: RestorableStateSchema,
    rollouts: z.array(RolloutMarkSchema),
  }),
);
export type CheckpointRecord = z.infer<typeof CheckpointRecordSchema>;

/**
 * A restore in progress. Every step it drives is idempotent (cut a rollout to its size after
 * saving the rest to `side_file`, make a folder match the checkpoint, write run.json), so a
 * restore a crash interrupted is finished by running the same steps again.
 */
export const RestoreIntentSchema = lazySchema(() =>
  z.object({
    version: z.literal(1),
    checkpoint: CheckpointIdSchema,
    commit: z.string().regex(/^[0-9a-f]{40}$/),
    started_at: z.string(),
    rollouts: z.array(RolloutMarkSchema.extend({ side_file: z.string() })),
    /** A run on a repository: the commit the branch goes back to, and the ref that keeps what it held. */
    repo: z.object({ commit: z.string(), keep_ref: z.string() }).optional(),
  }),
);
export type RestoreIntent = z.infer<typeof RestoreIntentSchema>;

/** The stat cache that spares re-reading unchanged files (`<gitdir>/relay-stat-cache.json`). */
export const StatCacheSchema = lazySchema(() =>
  z.object({
    version: z.literal(1),
    written_at_ms: z.number(),
    /** Per file: its stat when it was hashed, its blob, and when it was hashed (older caches: written_at_ms). */
    files: z.record(
      z.string(),
      z.object({
        size: z.number(),
        mtime_ms: z.number(),
        ino: z.number(),
        mode: z.string(),
        oid: z.string(),
        seen_at_ms: z.number().optional(),
      }),
    ),
  }),
);
export type StatCache = z.infer<typeof StatCacheSchema>;
