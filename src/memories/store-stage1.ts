/**
 * Phase-1 jobs, one per thread: whether a thread needs one, claims under the cap on running
 * jobs with retry backoff and budget, heartbeats, and the three ways a run ends.
 */
import { randomUUID } from "node:crypto";
import { ok, type Result } from "../util/result.ts";
import type { StateDb, Tx } from "./db.ts";
import { takeOverReason, type HolderReport } from "./holder.ts";
import { JobRowSchema, must, parseRows, type JobRow, type Stage1Row } from "./rows.ts";
import { judgeLease, type TakeOver, type TakeOverJudge } from "./store-leases.ts";
import { enqueueGlobal } from "./store-phase2.ts";
import { DEFAULT_RETRY_BUDGET, insertJob, ownedRunning, read, readJob, readOutput, setJob, STAGE1_KIND, tx } from "./store-tx.ts";

export type Stage1Claim =
  | { kind: "claimed"; token: string; tookOver?: TakeOver }
  | { kind: "skipped_up_to_date" }
  /** `holder` is absent when the cap on running jobs, not a lease on this rollout, stopped it. */
  | { kind: "skipped_running"; holder?: HolderReport }
  | { kind: "skipped_retry_backoff" }
  | { kind: "skipped_retry_exhausted" };

function upToDate(job: JobRow | undefined, out: Stage1Row | undefined, sourceUpdatedAt: number): boolean {
  return (out !== undefined && out.source_updated_at >= sourceUpdatedAt) || (job?.last_success_watermark ?? -1) >= sourceUpdatedAt;
}

export async function needsStage1(state: StateDb, threadId: string, sourceUpdatedAt: number): Promise<Result<boolean>> {
  return read(async () => {
    const job = await readJob(state.db, STAGE1_KIND, threadId);
    const out = await readOutput(state.db, threadId);
    return ok(!upToDate(job, out, sourceUpdatedAt));
  });
}

export interface Stage1ClaimRequest {
  threadId: string;
  sourceUpdatedAt: number;
  workerId: string;
  leaseSeconds: number;
  maxRunningJobs: number;
  now: number;
  takeOver?: TakeOverJudge;
}

export async function tryClaimStage1(state: StateDb, r: Stage1ClaimRequest): Promise<Result<Stage1Claim>> {
  return tx(state, async (t) => {
    const job = await readJob(t, STAGE1_KIND, r.threadId);
    const out = await readOutput(t, r.threadId);
    if (upToDate(job, out, r.sourceUpdatedAt)) return { kind: "skipped_up_to_date" } as const;
    const judge = r.takeOver ?? takeOverReason;
    // Claims of dead holders do not count against the cap: they are about to be taken over.
    const runningOthers = (await runningStage1(t, r.now, r.threadId)).filter((j) => judge(j, r.now) === undefined).length;
    const token = randomUUID();
    const claimed = {
      status: "running",
      worker_id: r.workerId,
      ownership_token: token,
      started_at: r.now,
      finished_at: null,
      lease_until: r.now + r.leaseSeconds,
      heartbeat_at: r.now,
      retry_at: null,
      last_error: null,
      input_watermark: r.sourceUpdatedAt,
    };
    if (!job) {
      if (runningOthers >= r.maxRunningJobs) return { kind: "skipped_running" } as const;
      await insertJob(t, STAGE1_KIND, r.threadId, claimed);
      return { kind: "claimed", token } as const;
    }
    const advanced = (job.input_watermark ?? -1) < r.sourceUpdatedAt;
    const verdict = judgeLease(job, r.now, judge);
    if ("respect" in verdict) return { kind: "skipped_running", holder: verdict.respect } as const;
    const tookOver = verdict.tookOver;
    if (!tookOver && !advanced && job.retry_remaining <= 0) return { kind: "skipped_retry_exhausted" } as const;
    if (!tookOver && !advanced && job.retry_at !== null && job.retry_at > r.now) return { kind: "skipped_retry_backoff" } as const;
    if (runningOthers >= r.maxRunningJobs) return { kind: "skipped_running" } as const;
    await setJob(t, STAGE1_KIND, r.threadId, { ...claimed, retry_remaining: advanced ? DEFAULT_RETRY_BUDGET : job.retry_remaining });
    return tookOver ? ({ kind: "claimed", token, tookOver } as const) : ({ kind: "claimed", token } as const);
  });
}

async function runningStage1(t: Tx, now: number, exceptKey?: string): Promise<JobRow[]> {
  let q = t.selectFrom("jobs").selectAll().where("kind", "=", STAGE1_KIND).where("status", "=", "running").where("lease_until", ">", now);
  if (exceptKey !== undefined) q = q.where("job_key", "!=", exceptKey);
  const rows = await q.execute();
  return must(parseRows(JobRowSchema, "jobs", (row) => `${STAGE1_KIND}/${String(row.job_key)}`, rows));
}

/** Renews every live phase-1 claim `workerId` holds (its heartbeat and lease). */
export async function heartbeatStage1(state: StateDb, workerId: string, leaseSeconds: number, now: number): Promise<Result<number>> {
  return tx(state, async (t) => {
    const r = await t
      .updateTable("jobs")
      .set({ heartbeat_at: now, lease_until: now + leaseSeconds })
      .where("kind", "=", STAGE1_KIND)
      .where("status", "=", "running")
      .where("worker_id", "=", workerId)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  });
}

/** Ends an owned stage-1 run as done; its input watermark becomes the success watermark. */
function finishStage1(t: Tx, threadId: string, job: JobRow, now: number): Promise<unknown> {
  return setJob(t, STAGE1_KIND, threadId, { status: "done", finished_at: now, lease_until: null, last_error: null, last_success_watermark: job.input_watermark });
}

export interface Stage1Result {
  rawMemory: string;
  rolloutSummary: string;
  rolloutSlug: string | null;
}

/** False when the claim was lost (lease stolen): nothing is written then. */
export async function markStage1Succeeded(state: StateDb, threadId: string, token: string, sourceUpdatedAt: number, res: Stage1Result, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, STAGE1_KIND, threadId, token);
    if (!job) return false;
    await finishStage1(t, threadId, job, now);
    await writeOutput(t, threadId, sourceUpdatedAt, res, now);
    await enqueueGlobal(t, sourceUpdatedAt);
    return true;
  });
}

/** Inserts the thread's output, or replaces one that is not newer than `sourceUpdatedAt`. */
async function writeOutput(t: Tx, threadId: string, sourceUpdatedAt: number, res: Stage1Result, now: number): Promise<void> {
  const existing = await readOutput(t, threadId);
  if (!existing) {
    await t
      .insertInto("stage1_outputs")
      .values({
        thread_id: threadId,
        source_updated_at: sourceUpdatedAt,
        raw_memory: res.rawMemory,
        rollout_summary: res.rolloutSummary,
        rollout_slug: res.rolloutSlug,
        generated_at: now,
        usage_count: null,
        last_usage: null,
        selected_for_phase2: 0,
        selected_for_phase2_source_updated_at: null,
      })
      .execute();
  } else if (sourceUpdatedAt >= existing.source_updated_at) {
    await t
      .updateTable("stage1_outputs")
      .set({ source_updated_at: sourceUpdatedAt, raw_memory: res.rawMemory, rollout_summary: res.rolloutSummary, rollout_slug: res.rolloutSlug, generated_at: now })
      .where("thread_id", "=", threadId)
      .execute();
  }
}

export async function markStage1NoOutput(state: StateDb, threadId: string, token: string, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, STAGE1_KIND, threadId, token);
    if (!job) return false;
    await finishStage1(t, threadId, job, now);
    const del = await t.deleteFrom("stage1_outputs").where("thread_id", "=", threadId).executeTakeFirst();
    if (Number(del.numDeletedRows) > 0) await enqueueGlobal(t, job.input_watermark ?? now);
    return true;
  });
}

export async function markStage1Failed(state: StateDb, threadId: string, token: string, reason: string, retryDelaySeconds: number, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, STAGE1_KIND, threadId, token);
    if (!job) return false;
    await setJob(t, STAGE1_KIND, threadId, { status: "error", finished_at: now, lease_until: null, retry_at: now + retryDelaySeconds, retry_remaining: job.retry_remaining - 1, last_error: reason.slice(0, 2000) });
    return true;
  });
}

export async function readStage1Job(state: StateDb, threadId: string): Promise<Result<JobRow | undefined>> {
  return read(async () => ok(await readJob(state.db, STAGE1_KIND, threadId)));
}
