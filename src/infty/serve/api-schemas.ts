/**
 * The JSON `relay infty serve` answers with, defined once: the server builds these values and
 * its tests parse them; the page imports the types only (nothing of zod reaches the browser).
 */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import { CheckpointInfoSchema } from "../checkpoint-format.ts";
import { LogLineSchema } from "../event-log.ts";
import { RunMetaSchema, RunStatusSchema } from "../run-format.ts";

export const ApiErrorSchema = lazySchema(() =>
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
);
export type ApiError = z.infer<typeof ApiErrorSchema>;

/** One line of the runs list. */
export const RunSummarySchema = lazySchema(() =>
  z.object({
    id: z.string(),
    objective: z.string(),
    status: RunStatusSchema,
    status_detail: z.string(),
    /** A process drives the run now (its lease is held by a process that is there). */
    live: z.boolean(),
    /** run.json says running but nobody drives it: why, and the command that resumes it. */
    stale: z.string().optional(),
    roles: z.array(z.object({ role: z.string(), model: z.string() })),
    created_at: z.string(),
    updated_at: z.string(),
    turns: z.number().int(),
    max_turns: z.number().int(),
    tokens_used: z.number().int(),
    max_tokens: z.number().int().nullable(),
    deliverable: z.boolean(),
  }),
);
export type RunSummary = z.infer<typeof RunSummarySchema>;

export const RunListSchema = lazySchema(() =>
  z.object({ runs: z.array(RunSummarySchema), warnings: z.array(z.string()) }),
);
export type RunList = z.infer<typeof RunListSchema>;

/** A role's share of the budgets, from the run's log. */
export const RoleBudgetSchema = lazySchema(() =>
  z.object({
    role: z.string(),
    tokens: z.number().int(),
    /** Time its turns took (wall clock, all processes). */
    busy_ms: z.number().int(),
    turns: z.number().int(),
  }),
);
export type RoleBudget = z.infer<typeof RoleBudgetSchema>;

export const BudgetSchema = lazySchema(() =>
  z.object({
    turns: z.number().int(),
    max_turns: z.number().int(),
    wall_ms_used: z.number().int(),
    max_wall_ms: z.number().int(),
    tokens_used: z.number().int(),
    max_tokens: z.number().int().nullable(),
    roles: z.array(RoleBudgetSchema),
  }),
);
export type Budget = z.infer<typeof BudgetSchema>;

export const RunDetailSchema = lazySchema(() =>
  z.object({
    summary: RunSummarySchema,
    /** run.json as it is. */
    run: RunMetaSchema,
    liveness: z.object({
      live: z.boolean(),
      pid: z.number().int().optional(),
      heartbeat_age_ms: z.number(),
      stale: z.string().optional(),
    }),
    budget: BudgetSchema,
    /** Lines in events.jsonl now. */
    events: z.number().int(),
    /** What the server lets the page do (`--allow-actions`). */
    actions: z.boolean(),
  }),
);
export type RunDetail = z.infer<typeof RunDetailSchema>;

/** One line of events.jsonl with its index (also the SSE `id`). */
export const IndexedEventSchema = lazySchema(() => z.object({ n: z.number().int().min(0), event: LogLineSchema }));
export type IndexedEvent = z.infer<typeof IndexedEventSchema>;

export const EventsPageSchema = lazySchema(() =>
  z.object({
    run_id: z.string(),
    from: z.number().int(),
    total: z.number().int(),
    events: z.array(IndexedEventSchema),
  }),
);
export type EventsPage = z.infer<typeof EventsPageSchema>;

export const FileEntrySchema = lazySchema(() =>
  z.object({ path: z.string(), size: z.number().int(), kind: z.enum(["file", "dir"]) }),
);
export type FileEntry = z.infer<typeof FileEntrySchema>;

export const FileListSchema = lazySchema(() => z.object({ files: z.array(FileEntrySchema), truncated: z.boolean() }));
export type FileList = z.infer<typeof FileListSchema>;

export const CheckpointListSchema = lazySchema(() =>
  z.object({ checkpoints: z.array(CheckpointInfoSchema.extend({ commit: z.string() })) }),
);
export type CheckpointList = z.infer<typeof CheckpointListSchema>;

export const ActionResultSchema = lazySchema(() => z.object({ action: z.string(), message: z.string() }));
export type ActionResult = z.infer<typeof ActionResultSchema>;

/** The SSE stream: `data` of the default event is an IndexedEvent; `event: run` carries a RunDetail. */
export const SSE_RUN_EVENT = "run";
