/**
 * What the fleet's listings hold (relay infty list/workers --db --json, and the live view's
 * /api/fleet), defined once. No database code here: the live view's page types come from it.
 */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";

export const FleetRunSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    state: z.string(),
    worker: z.string().nullable(),
    priority: z.number().int(),
    submitter: z.string(),
    objective: z.string(),
    /** The repository it was submitted with (URL or path), or null. */
    repo: z.string().nullable(),
    reason: z.string().nullable(),
    takeovers: z.number().int(),
    submitted_at: z.string(),
    updated_at: z.string(),
    /** The driver's lease: its epoch, holder and heartbeat age (by the DB's clock). */
    lease: z
      .object({ epoch: z.number().int(), holder: z.string(), heartbeat_age_s: z.number(), released: z.boolean() })
      .nullable(),
  }),
);
export type FleetRun = z.infer<typeof FleetRunSchema>;

export const FleetWorkerSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    host: z.string(),
    pid: z.number().int(),
    max_runs: z.number().int(),
    runs: z.number().int(),
    started_at: z.string(),
    heartbeat_age_s: z.number(),
    stopped: z.boolean(),
  }),
);
export type FleetWorker = z.infer<typeof FleetWorkerSchema>;

/** The live view's fleet panel: where the DB is (password hidden), its runs and its workers. */
export const FleetViewSchema = lazySchema(() =>
  z.object({ location: z.string(), runs: z.array(FleetRunSchema), workers: z.array(FleetWorkerSchema) }),
);
export type FleetView = z.infer<typeof FleetViewSchema>;
