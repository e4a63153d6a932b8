/**
 * Jobs with leases, retry backoff and watermarks; stage-1 outputs; phase 2 selection and usage.
 * Every state change runs in `StateDb.exclusive`, so read-then-write is safe across workers.
 * Times are epoch seconds, except `memory_threads.*_ms`.
 */
import { randomUUID } from "node:crypto";
import { errorMessage, err, ok, type Result } from "../util/result.ts";
import type { JobsTable, StateDb, Tx } from "./db.ts";
import { holderReport, takeOverReason, type HolderReport } from "./holder.ts";
import { JobRowSchema, must, parseRow, parseRows, RowError, Stage1RowSchema, ThreadRowSchema, type JobRow, type Stage1Row, type ThreadRow } from "./rows.ts";

export const STAGE1_KIND = "memory_stage1";
export const PHASE2_KIND = "memory_consolidate_global";
export const PHASE2_KEY = "global";
export const DEFAULT_RETRY_BUDGET = 3;

/** A live lease taken from a holder that is gone (see holder.ts): from whom, and why. */
export interface TakeOver {
  holder: HolderReport;
  reason: string;
}

/**
 * Judges a live lease held by someone else: a reason to take it over now, or undefined to
 * respect it until it ends. Default: `takeOverReason` (holder gone, or heartbeat stale).
 */
export type TakeOverJudge = (job: JobRow, now: number) => string | undefined;

export type Stage1Claim =
  | { kind: "claimed"; token: string; tookOver?: TakeOver }
  | { kind: "skipped_up_to_date" }
  /** `holder` is absent when the cap on running jobs, not a lease on this rollout, stopped it. */
  | { kind: "skipped_running"; holder?: HolderReport }
  | { kind: "skipped_retry_backoff" }
  | { kind: "skipped_retry_exhausted" };

export type Phase2Claim =
  | { kind: "claimed"; token: string; inputWatermark: number; tookOver?: TakeOver }
  | { kind: "skipped_retry_unavailable" }
  | { kind: "skipped_cooldown" }
  | { kind: "skipped_running"; holder: HolderReport };

const liveLease = (job: JobRow, now: number) => job.status === "running" && job.lease_until !== null && job.lease_until > now;

/** Runs an exclusive transaction and turns thrown row/DB errors into values. */
export async function tx<T>(state: StateDb, fn: (t: Tx) => Promise<T>): Promise<Result<T>> {
  try {
    return ok(await state.exclusive(fn));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", `state DB ${state.location}: ${errorMessage(e)}`);
  }
}

async function readJob(t: Tx, kind: string, key: string): Promise<JobRow | undefined> {
  const row = await t.selectFrom("jobs").selectAll().where("kind", "=", kind).where("job_key", "=", key).executeTakeFirst();
  return row ? must(parseRow(JobRowSchema, "jobs", `${kind}/${key}`, row)) : undefined;
}

async function readOutput(t: Tx, threadId: string): Promise<Stage1Row | undefined> {
  const row = await t.selectFrom("stage1_outputs").selectAll().where("thread_id", "=", threadId).executeTakeFirst();
  return row ? must(parseRow(Stage1RowSchema, "stage1_outputs", threadId, row)) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Threads (the rollout catalog the scan fills)

export async function upsertThreads(state: StateDb, threads: ThreadRow[]): Promise<Result<number>> {
  if (!threads.length) return ok(0);
  return tx(state, async (t) => {
    for (let i = 0; i < threads.length; i += 100) {
      const chunk = threads.slice(i, i + 100);
      await t
        .insertInto("memory_threads")
        .values(chunk)
        .onConflict((oc) =>
          oc.column("id").doUpdateSet((eb) => ({
            rollout_path: eb.ref("excluded.rollout_path"),
            source: eb.ref("excluded.source"),
            cwd: eb.ref("excluded.cwd"),
            git_branch: eb.ref("excluded.git_branch"),
            updated_at_ms: eb.ref("excluded.updated_at_ms"),
            origin: eb.ref("excluded.origin"),
            host: eb.ref("excluded.host"),
          })),
        )
        .execute();
    }
    return threads.length;
  });
}

export async function listThreads(state: StateDb): Promise<Result<ThreadRow[]>> {
  try {
    const rows = await state.db.selectFrom("memory_threads").selectAll().execute();
    return parseRows(ThreadRowSchema, "memory_threads", (r) => String(r.id), rows);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

export async function getThread(state: StateDb, id: string): Promise<Result<ThreadRow | undefined>> {
  try {
    const row = await state.db.selectFrom("memory_threads").selectAll().where("id", "=", id).executeTakeFirst();
    return row ? parseRow(ThreadRowSchema, "memory_threads", id, row) : ok(undefined);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

export interface CandidateQuery {
  nowMs: number;
  maxAgeDays: number;
  minIdleHours: number;
  scanLimit: number;
  sources: readonly string[];
  excludeThreadId?: string;
  /** Only rollouts this host's scan saw (their files are readable here). */
  host?: string;
}

/** Enabled threads from an allowed source, updated inside [now - age, now - idle], newest first. */
export async function listClaimCandidates(state: StateDb, q: CandidateQuery): Promise<Result<ThreadRow[]>> {
  if (q.scanLimit <= 0 || !q.sources.length) return ok([]);
  const ageCutoff = q.nowMs - Math.max(0, q.maxAgeDays) * 86_400_000;
  const idleCutoff = q.nowMs - Math.max(0, q.minIdleHours) * 3_600_000;
  try {
    let query = state.db
      .selectFrom("memory_threads")
      .selectAll()
      .where("memory_mode", "=", "enabled")
      .where("source", "in", [...q.sources])
      .where("updated_at_ms", ">=", ageCutoff)
      .where("updated_at_ms", "<=", idleCutoff);
    if (q.excludeThreadId) query = query.where("id", "!=", q.excludeThreadId);
    if (q.host !== undefined) query = query.where("host", "=", q.host);
    const rows = await query.orderBy("updated_at_ms", "desc").orderBy("id", "desc").limit(q.scanLimit).execute();
    return parseRows(ThreadRowSchema, "memory_threads", (r) => String(r.id), rows);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

// ---------------------------------------------------------------------------------------------
// Stage 1 jobs

function upToDate(job: JobRow | undefined, out: Stage1Row | undefined, sourceUpdatedAt: number): boolean {
  return (out !== undefined && out.source_updated_at >= sourceUpdatedAt) || (job?.last_success_watermark ?? -1) >= sourceUpdatedAt;
}

export async function needsStage1(state: StateDb, threadId: string, sourceUpdatedAt: number): Promise<Result<boolean>> {
  try {
    const job = await readJob(state.db, STAGE1_KIND, threadId);
    const out = await readOutput(state.db, threadId);
    return ok(!upToDate(job, out, sourceUpdatedAt));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", errorMessage(e));
  }
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
      await t
        .insertInto("jobs")
        .values({ kind: STAGE1_KIND, job_key: r.threadId, retry_remaining: DEFAULT_RETRY_BUDGET, last_success_watermark: null, ...claimed })
        .execute();
      return { kind: "claimed", token } as const;
    }
    const advanced = (job.input_watermark ?? -1) < r.sourceUpdatedAt;
    let tookOver: TakeOver | undefined;
    if (liveLease(job, r.now)) {
      const reason = judge(job, r.now);
      if (reason === undefined) return { kind: "skipped_running", holder: holderReport(job, r.now) } as const;
      tookOver = { holder: holderReport(job, r.now), reason };
    }
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

function setJob(t: Tx, kind: string, key: string, values: Partial<Omit<JobsTable, "kind" | "job_key">>): Promise<unknown> {
  return t.updateTable("jobs").set(values).where("kind", "=", kind).where("job_key", "=", key).execute();
}

/** Ends an owned stage-1 run as done; its input watermark becomes the success watermark. */
function finishStage1(t: Tx, threadId: string, job: JobRow, now: number): Promise<unknown> {
  return setJob(t, STAGE1_KIND, threadId, { status: "done", finished_at: now, lease_until: null, last_error: null, last_success_watermark: job.input_watermark });
}

async function ownedRunning(t: Tx, kind: string, key: string, token: string): Promise<JobRow | undefined> {
  const job = await readJob(t, kind, key);
  return job && job.status === "running" && job.ownership_token === token ? job : undefined;
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
    await enqueueGlobal(t, sourceUpdatedAt);
    return true;
  });
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

/** Marks the global job pending; its input watermark only moves forward. */
export async function enqueueGlobal(t: Tx, watermark: number): Promise<void> {
  const job = await readJob(t, PHASE2_KIND, PHASE2_KEY);
  if (!job) {
    await t
      .insertInto("jobs")
      .values({
        kind: PHASE2_KIND,
        job_key: PHASE2_KEY,
        status: "pending",
        worker_id: null,
        ownership_token: null,
        started_at: null,
        finished_at: null,
        lease_until: null,
        retry_at: null,
        retry_remaining: DEFAULT_RETRY_BUDGET,
        last_error: null,
        input_watermark: watermark,
        last_success_watermark: 0,
      })
      .execute();
    return;
  }
  const running = job.status === "running";
  const prev = job.input_watermark ?? 0;
  await setJob(t, PHASE2_KIND, PHASE2_KEY, {
    status: running ? "running" : "pending",
    retry_at: running ? job.retry_at : null,
    retry_remaining: Math.max(job.retry_remaining, DEFAULT_RETRY_BUDGET),
    input_watermark: watermark > prev ? watermark : prev + 1,
  });
}

// ---------------------------------------------------------------------------------------------
// Phase 2 global lock

export interface Phase2ClaimRequest {
  workerId: string;
  leaseSeconds: number;
  /** Seconds after a success during which no new run starts (0 = none). */
  cooldownSeconds: number;
  now: number;
  takeOver?: TakeOverJudge;
}

export async function tryClaimPhase2(state: StateDb, r: Phase2ClaimRequest): Promise<Result<Phase2Claim>> {
  return tx(state, async (t) => {
    const job = await readJob(t, PHASE2_KIND, PHASE2_KEY);
    const token = randomUUID();
    const lease = { status: "running", worker_id: r.workerId, ownership_token: token, started_at: r.now, lease_until: r.now + r.leaseSeconds, heartbeat_at: r.now };
    if (!job) {
      await t
        .insertInto("jobs")
        .values({ kind: PHASE2_KIND, job_key: PHASE2_KEY, ...lease, finished_at: null, retry_at: null, retry_remaining: DEFAULT_RETRY_BUDGET, last_error: null, input_watermark: 0, last_success_watermark: 0 })
        .execute();
      return { kind: "claimed", token, inputWatermark: 0 } as const;
    }
    if (job.retry_at !== null && job.retry_at > r.now) return { kind: "skipped_retry_unavailable" } as const;
    let tookOver: TakeOver | undefined;
    if (liveLease(job, r.now)) {
      const reason = (r.takeOver ?? takeOverReason)(job, r.now);
      if (reason === undefined) return { kind: "skipped_running", holder: holderReport(job, r.now) } as const;
      tookOver = { holder: holderReport(job, r.now), reason };
    }
    if (job.status !== "running" && job.last_error === null && job.finished_at !== null && job.finished_at > r.now - r.cooldownSeconds) {
      return { kind: "skipped_cooldown" } as const;
    }
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { ...lease, retry_at: null, last_error: null, finished_at: null });
    const claimed = { kind: "claimed", token, inputWatermark: job.input_watermark ?? 0 } as const;
    return tookOver ? { ...claimed, tookOver } : claimed;
  });
}

export async function heartbeatPhase2(state: StateDb, token: string, leaseSeconds: number, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    if (!(await ownedRunning(t, PHASE2_KIND, PHASE2_KEY, token))) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { lease_until: now + leaseSeconds, heartbeat_at: now });
    return true;
  });
}

export async function markPhase2Failed(state: StateDb, token: string, reason: string, retryDelaySeconds: number, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await readJob(t, PHASE2_KIND, PHASE2_KEY);
    if (!job || !(job.ownership_token === token || job.ownership_token === null)) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { status: "error", finished_at: now, lease_until: null, retry_at: now + retryDelaySeconds, retry_remaining: Math.max(job.retry_remaining - 1, 0), last_error: reason.slice(0, 2000) });
    return true;
  });
}

export interface SelectedRef {
  threadId: string;
  sourceUpdatedAt: number;
}

/** Completes the owned run: the success watermark never moves backwards; the selection snapshot is exact. */
export async function markPhase2Succeeded(state: StateDb, token: string, completedWatermark: number, selected: SelectedRef[], now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, PHASE2_KIND, PHASE2_KEY, token);
    if (!job) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { status: "done", finished_at: now, lease_until: null, last_error: null, last_success_watermark: Math.max(job.last_success_watermark ?? 0, completedWatermark) });
    await t.updateTable("stage1_outputs").set({ selected_for_phase2: 0, selected_for_phase2_source_updated_at: null }).where("selected_for_phase2", "!=", 0).execute();
    for (const s of selected) {
      await t
        .updateTable("stage1_outputs")
        .set({ selected_for_phase2: 1, selected_for_phase2_source_updated_at: s.sourceUpdatedAt })
        .where("thread_id", "=", s.threadId)
        .where("source_updated_at", "=", s.sourceUpdatedAt)
        .execute();
    }
    return true;
  });
}

export async function readPhase2Job(state: StateDb): Promise<Result<JobRow | undefined>> {
  try {
    return ok(await readJob(state.db, PHASE2_KIND, PHASE2_KEY));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", errorMessage(e));
  }
}

/** Every live lease (phase-1 claims and the phase-2 lock), the phase-2 lock first. */
export async function listLeases(state: StateDb, now: number): Promise<Result<JobRow[]>> {
  try {
    const rows = await state.db.selectFrom("jobs").selectAll().where("status", "=", "running").where("lease_until", ">", now).orderBy("kind").orderBy("started_at").execute();
    const jobs = parseRows(JobRowSchema, "jobs", (r) => `${String(r.kind)}/${String(r.job_key)}`, rows);
    if ("error" in jobs) return jobs;
    return ok([...jobs.ok.filter((j) => j.kind === PHASE2_KIND), ...jobs.ok.filter((j) => j.kind !== PHASE2_KIND)]);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

export async function readStage1Job(state: StateDb, threadId: string): Promise<Result<JobRow | undefined>> {
  try {
    return ok(await readJob(state.db, STAGE1_KIND, threadId));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", errorMessage(e));
  }
}

// ---------------------------------------------------------------------------------------------
// Selection, usage, retention

export interface SelectedOutput extends Stage1Row {
  thread: ThreadRow;
}

/** Top `n` by usage count, then recency, inside `maxUnusedDays`; returned sorted by thread id. */
export async function selectPhase2Inputs(state: StateDb, n: number, maxUnusedDays: number, now: number): Promise<Result<SelectedOutput[]>> {
  const cutoff = now - Math.max(0, maxUnusedDays) * 86_400;
  try {
    const rows = await state.db
      .selectFrom("stage1_outputs as o")
      .innerJoin("memory_threads as t", "t.id", "o.thread_id")
      .selectAll("o")
      .select(["t.origin as t_origin", "t.rollout_path as t_rollout_path", "t.source as t_source", "t.cwd as t_cwd", "t.git_branch as t_git_branch", "t.created_at_ms as t_created_at_ms", "t.updated_at_ms as t_updated_at_ms", "t.memory_mode as t_memory_mode", "t.host as t_host"])
      .where("t.memory_mode", "=", "enabled")
      .where((eb) =>
        eb.or([
          eb.and([eb("o.last_usage", "is not", null), eb("o.last_usage", ">=", cutoff)]),
          eb.and([eb("o.last_usage", "is", null), eb("o.source_updated_at", ">=", cutoff)]),
        ]),
      )
      .orderBy((eb) => eb.fn.coalesce("o.usage_count", eb.lit(0)), "desc")
      .orderBy((eb) => eb.fn.coalesce("o.last_usage", "o.source_updated_at"), "desc")
      .orderBy("o.source_updated_at", "desc")
      .orderBy("o.thread_id", "desc")
      .execute();
    const out: SelectedOutput[] = [];
    for (const row of rows) {
      if (out.length >= Math.max(0, n)) break;
      const p = parseRow(Stage1RowSchema, "stage1_outputs", String(row.thread_id), row);
      if ("error" in p) return p;
      if (p.ok.raw_memory.trim() === "" && p.ok.rollout_summary.trim() === "") continue;
      const th = parseRow(ThreadRowSchema, "memory_threads", p.ok.thread_id, {
        id: row.thread_id,
        origin: row.t_origin,
        rollout_path: row.t_rollout_path,
        source: row.t_source,
        cwd: row.t_cwd,
        git_branch: row.t_git_branch,
        created_at_ms: row.t_created_at_ms,
        updated_at_ms: row.t_updated_at_ms,
        memory_mode: row.t_memory_mode,
        host: row.t_host,
      });
      if ("error" in th) return th;
      out.push({ ...p.ok, thread: th.ok });
    }
    out.sort((a, b) => (a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0));
    return ok(out);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

export async function listOutputs(state: StateDb): Promise<Result<Stage1Row[]>> {
  try {
    const rows = await state.db.selectFrom("stage1_outputs").selectAll().orderBy("source_updated_at", "desc").orderBy("thread_id", "desc").execute();
    return parseRows(Stage1RowSchema, "stage1_outputs", (r) => String(r.thread_id), rows);
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}

export async function getOutput(state: StateDb, threadId: string): Promise<Result<Stage1Row | undefined>> {
  try {
    return ok(await readOutput(state.db, threadId));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", errorMessage(e));
  }
}

/** One increment per id occurrence (duplicates count again); missing ids are ignored. */
export async function recordUsage(state: StateDb, threadIds: string[], now: number): Promise<Result<number>> {
  return tx(state, async (t) => {
    let n = 0;
    for (const id of threadIds) {
      const r = await t
        .updateTable("stage1_outputs")
        .set((eb) => ({ usage_count: eb(eb.fn.coalesce("usage_count", eb.lit(0)), "+", 1), last_usage: now }))
        .where("thread_id", "=", id)
        .executeTakeFirst();
      n += Number(r.numUpdatedRows);
    }
    return n;
  });
}

/** Deletes up to `limit` stale rows that are not part of the current baseline. */
export async function pruneStage1(state: StateDb, maxUnusedDays: number, limit: number, now: number): Promise<Result<number>> {
  const cutoff = now - Math.max(0, maxUnusedDays) * 86_400;
  return tx(state, async (t) => {
    const rows = await t
      .selectFrom("stage1_outputs")
      .select(["thread_id"])
      .where("selected_for_phase2", "=", 0)
      .where((eb) => eb(eb.fn.coalesce("last_usage", "source_updated_at"), "<", cutoff))
      .orderBy((eb) => eb.fn.coalesce("last_usage", "source_updated_at"), "asc")
      .orderBy("source_updated_at", "asc")
      .orderBy("thread_id", "asc")
      .limit(limit)
      .execute();
    const ids = rows.map((r) => String(r.thread_id));
    if (ids.length) await t.deleteFrom("stage1_outputs").where("thread_id", "in", ids).execute();
    return ids.length;
  });
}

/** Forgets one thread: its output and stage-1 job go, the thread is marked so it is never re-extracted. */
export async function forgetThread(state: StateDb, threadId: string, now: number): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    // Existence only, not parsed: forget is also the repair for a damaged row.
    const out = await t.selectFrom("stage1_outputs").select("thread_id").where("thread_id", "=", threadId).executeTakeFirst();
    const job = await t.selectFrom("jobs").select("job_key").where("kind", "=", STAGE1_KIND).where("job_key", "=", threadId).executeTakeFirst();
    await t.deleteFrom("stage1_outputs").where("thread_id", "=", threadId).execute();
    await t.deleteFrom("jobs").where("kind", "=", STAGE1_KIND).where("job_key", "=", threadId).execute();
    const th = await t.selectFrom("memory_threads").select("id").where("id", "=", threadId).executeTakeFirst();
    if (th) await t.updateTable("memory_threads").set({ memory_mode: "forgotten" }).where("id", "=", threadId).execute();
    else {
      // Not scanned yet: a placeholder keeps the scan from enabling it later.
      await t
        .insertInto("memory_threads")
        .values({ id: threadId, origin: "forgotten", rollout_path: "(not scanned)", source: "unknown", cwd: "", git_branch: null, created_at_ms: now * 1000, updated_at_ms: 0, memory_mode: "forgotten", host: "" })
        .execute();
    }
    if (out) await enqueueGlobal(t, now);
    return out !== undefined || job !== undefined;
  });
}

export interface StatusCounts {
  threads: number;
  outputs: number;
  jobs: Record<string, number>;
}

export async function statusCounts(state: StateDb): Promise<Result<StatusCounts>> {
  try {
    const threads = await state.db.selectFrom("memory_threads").select((eb) => eb.fn.countAll().as("n")).executeTakeFirst();
    const outputs = await state.db.selectFrom("stage1_outputs").select((eb) => eb.fn.countAll().as("n")).executeTakeFirst();
    const jobs = await state.db.selectFrom("jobs").select(["status", (eb) => eb.fn.countAll().as("n")]).where("kind", "=", STAGE1_KIND).groupBy("status").execute();
    const byStatus: Record<string, number> = {};
    for (const j of jobs) byStatus[String(j.status)] = Number(j.n);
    return ok({ threads: Number(threads?.n ?? 0), outputs: Number(outputs?.n ?? 0), jobs: byStatus });
  } catch (e) {
    return err("db_error", errorMessage(e));
  }
}
