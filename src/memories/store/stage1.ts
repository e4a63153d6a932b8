/**
 * Phase-1 jobs, one per thread: whether a thread needs one, claims under the cap on running
 * jobs with retry backoff and budget, heartbeats, and the three ways a run ends.
 */
import { randomUUID } from "../../util/random.ts";
import { ok, type Result } from "../../util/result.ts";
import { type HolderReport, takeOverReason } from "../holder.ts";
import type { StateDb, Tx } from "./db.ts";
import { judgeLease, liveLease, type TakeOver, type TakeOverJudge } from "./leases.ts";
import { enqueueGlobal } from "./phase2.ts";
import { type JobRow, JobRowSchema, must, parseRows, type Stage1Row } from "./rows.ts";
import {
  DEFAULT_RETRY_BUDGET,
  insertJob,
  ownedRunning,
  read,
  readJob,
  readJobs,
  readOutput,
  readOutputs,
  STAGE1_KIND,
  setJob,
  tx,
} from "./tx.ts";

export type Stage1Claim =
  | { kind: "claimed"; token: string; tookOver?: TakeOver }
  | { kind: "skipped_up_to_date" }
  /** A live worker holds this rollout's claim. */
  | { kind: "skipped_running"; holder: HolderReport }
  /** The cap on running jobs (`maxRunningJobs`) is reached; nobody holds this rollout. */
  | { kind: "skipped_cap" }
  | { kind: "skipped_retry_backoff" }
  | { kind: "skipped_retry_exhausted" };

function upToDate(job: JobRow | undefined, out: Stage1Row | undefined, sourceUpdatedAt: number): boolean {
  return (
    (out !== undefined && out.source_updated_at >= sourceUpdatedAt) ||
    (job?.last_success_watermark ?? -1) >= sourceUpdatedAt
  );
}

export interface Stage1ClaimRequest {
  threadId: string;
  sourceUpdatedAt: number;
  workerId: string;
  leaseSeconds: number;
  maxRunningJobs: number;
  /**
   * Claims this worker took earlier in the same run and has since ended: counted as running
   * against `maxRunningJobs`, like its claims still being extracted (default 0).
   */
  ended?: number;
  now: number;
  takeOver?: TakeOverJudge;
}

export interface Stage1ClaimBatch extends Omit<Stage1ClaimRequest, "threadId" | "sourceUpdatedAt"> {
  threads: ReadonlyArray<{ threadId: string; sourceUpdatedAt: number }>;
  /** Stop once this many are claimed: the threads after that are not looked at (default: no limit). */
  limit?: number;
}

export async function tryClaimStage1(state: StateDb, r: Stage1ClaimRequest): Promise<Result<Stage1Claim>> {
  const c = await tryClaimStage1Batch(state, {
    ...r,
    threads: [{ threadId: r.threadId, sourceUpdatedAt: r.sourceUpdatedAt }],
  });
  return "error" in c ? c : ok(c.ok[0]!);
}

/**
 * `tryClaimStage1` for each thread in order, in one transaction: their job and output rows are
 * read in two queries and the live claims counted once, so claiming n rollouts costs O(n) rows
 * read and about one statement per claim. One answer per thread looked at.
 */
export async function tryClaimStage1Batch(state: StateDb, b: Stage1ClaimBatch): Promise<Result<Stage1Claim[]>> {
  return tx(state, async (t) => {
    const ids = b.threads.map((x) => x.threadId);
    const jobs = await readJobs(t, STAGE1_KIND, ids);
    const outs = await readOutputs(t, ids);
    const live = { n: (await countLiveStage1(t, b.now)) + (b.ended ?? 0) };
    const answers: Stage1Claim[] = [];
    let claims = 0;
    for (const { threadId, sourceUpdatedAt } of b.threads) {
      if (claims >= (b.limit ?? Infinity)) break;
      const c = await claimIn(t, { ...b, threadId, sourceUpdatedAt }, jobs.get(threadId), outs.get(threadId), live);
      if (c.kind === "claimed") claims++;
      answers.push(c);
    }
    return answers;
  });
}

/** One claim inside the batch's transaction; `live.n` counts every live stage-1 claim and follows this one. */
async function claimIn(
  t: Tx,
  r: Stage1ClaimRequest,
  job: JobRow | undefined,
  out: Stage1Row | undefined,
  live: { n: number },
): Promise<Stage1Claim> {
  if (upToDate(job, out, r.sourceUpdatedAt)) return { kind: "skipped_up_to_date" };
  const ownLive = job !== undefined && liveLease(job, r.now);
  const full = () => capReached(t, r, live.n - (ownLive ? 1 : 0));
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
    if (await full()) return { kind: "skipped_cap" };
    await insertJob(t, STAGE1_KIND, r.threadId, claimed);
    live.n++;
    return { kind: "claimed", token };
  }
  const advanced = (job.input_watermark ?? -1) < r.sourceUpdatedAt;
  const verdict = judgeLease(job, r.now, r.takeOver ?? takeOverReason);
  if ("respect" in verdict) return { kind: "skipped_running", holder: verdict.respect };
  const tookOver = verdict.tookOver;
  if (!tookOver && !advanced && job.retry_remaining <= 0) return { kind: "skipped_retry_exhausted" };
  if (!tookOver && !advanced && job.retry_at !== null && job.retry_at > r.now) return { kind: "skipped_retry_backoff" };
  if (await full()) return { kind: "skipped_cap" };
  await setJob(t, STAGE1_KIND, r.threadId, {
    ...claimed,
    retry_remaining: advanced ? DEFAULT_RETRY_BUDGET : job.retry_remaining,
  });
  if (!ownLive) live.n++;
  return tookOver ? { kind: "claimed", token, tookOver } : { kind: "claimed", token };
}

async function countLiveStage1(t: Tx, now: number): Promise<number> {
  const row = await t
    .selectFrom("jobs")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("kind", "=", STAGE1_KIND)
    .where("status", "=", "running")
    .where("lease_until", ">", now)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Whether the live claims of other threads (`liveOthers` of them) fill the cap. Claims of dead
 * holders do not count: they are about to be taken over. The rows are read and judged only when
 * the plain count reaches the cap (judging can only lower it).
 */
async function capReached(t: Tx, r: Stage1ClaimRequest, liveOthers: number): Promise<boolean> {
  if (liveOthers < r.maxRunningJobs) return false;
  const judge = r.takeOver ?? takeOverReason;
  return (
    (await runningStage1(t, r.now, r.threadId)).filter((j) => judge(j, r.now) === undefined).length + (r.ended ?? 0) >=
    r.maxRunningJobs
  );
}

async function runningStage1(t: Tx, now: number, exceptKey?: string): Promise<JobRow[]> {
  let q = t
    .selectFrom("jobs")
    .selectAll()
    .where("kind", "=", STAGE1_KIND)
    .where("status", "=", "running")
    .where("lease_until", ">", now);
  if (exceptKey !== undefined) q = q.where("job_key", "!=", exceptKey);
  const rows = await q.execute();
  return must(parseRows(JobRowSchema, "jobs", (row) => `${STAGE1_KIND}/${String(row.job_key)}`, rows));
}

/** Renews every live phase-1 claim `workerId` holds (its heartbeat and lease). */
export async function heartbeatStage1(
  state: StateDb,
  workerId: string,
  leaseSeconds: number,
  now: number,
): Promise<Result<number>> {
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
  return setJob(t, STAGE1_KIND, threadId, {
    status: "done",
    finished_at: now,
    lease_until: null,
    last_error: null,
    last_success_watermark: job.input_watermark,
  });
}

export interface Stage1Result {
  rawMemory: string;
  rolloutSummary: string;
  rolloutSlug: string | null;
}

/** False when the claim was lost (lease stolen): nothing is written then. */
export async function markStage1Succeeded(
  state: StateDb,
  threadId: string,
  token: string,
  sourceUpdatedAt: number,
  res: Stage1Result,
  now: number,
): Promise<Result<boolean>> {
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
async function writeOutput(
  t: Tx,
  threadId: string,
  sourceUpdatedAt: number,
  res: Stage1Result,
  now: number,
): Promise<void> {
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
      .set({
        source_updated_at: sourceUpdatedAt,
        raw_memory: res.rawMemory,
        rollout_summary: res.rolloutSummary,
        rollout_slug: res.rolloutSlug,
        generated_at: now,
      })
      .where("thread_id", "=", threadId)
      .execute();
  }
}

export async function markStage1NoOutput(
  state: StateDb,
  threadId: string,
  token: string,
  now: number,
): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, STAGE1_KIND, threadId, token);
    if (!job) return false;
    await finishStage1(t, threadId, job, now);
    const del = await t.deleteFrom("stage1_outputs").where("thread_id", "=", threadId).executeTakeFirst();
    if (Number(del.numDeletedRows) > 0) await enqueueGlobal(t, job.input_watermark ?? now);
    return true;
  });
}

export async function markStage1Failed(
  state: StateDb,
  threadId: string,
  token: string,
  reason: string,
  retryDelaySeconds: number,
  now: number,
): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, STAGE1_KIND, threadId, token);
    if (!job) return false;
    await setJob(t, STAGE1_KIND, threadId, {
      status: "error",
      finished_at: now,
      lease_until: null,
      retry_at: now + retryDelaySeconds,
      retry_remaining: job.retry_remaining - 1,
      last_error: reason.slice(0, 2000),
    });
    return true;
  });
}

export async function readStage1Job(state: StateDb, threadId: string): Promise<Result<JobRow | undefined>> {
  return read(async () => ok(await readJob(state.db, STAGE1_KIND, threadId)));
}
