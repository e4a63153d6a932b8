/**
 * What every store/ module shares: the job kinds, the two wrappers that turn thrown row/DB
 * errors into values (`tx` for state changes, `read` for plain reads), and the reads and writes
 * of one job or output row. Every state change runs in `StateDb.exclusive`, so read-then-write
 * is safe across workers. Times are epoch seconds, except `memory_threads.*_ms`.
 */
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import type { JobsTable, StateDb, Tx } from "./db.ts";
import {
  type JobRow,
  JobRowSchema,
  must,
  parseRow,
  parseRows,
  RowError,
  type Stage1Row,
  Stage1RowSchema,
} from "./rows.ts";

export const STAGE1_KIND = "memory_stage1";
export const PHASE2_KIND = "memory_consolidate_global";
export const PHASE2_KEY = "global";
export const DEFAULT_RETRY_BUDGET = 3;

/** Runs an exclusive transaction and turns thrown row/DB errors into values. */
export async function tx<T>(state: StateDb, fn: (t: Tx) => Promise<T>): Promise<Result<T>> {
  try {
    return ok(await state.exclusive(fn));
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", `state DB ${state.location}: ${errorMessage(e)}`);
  }
}

/** Runs a read outside any transaction and turns thrown row/DB errors into values. */
export async function read<T>(fn: () => Promise<Result<T>>): Promise<Result<T>> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof RowError) return e.value;
    return err("db_error", errorMessage(e));
  }
}

export async function readJob(t: Tx, kind: string, key: string): Promise<JobRow | undefined> {
  const row = await t
    .selectFrom("jobs")
    .selectAll()
    .where("kind", "=", kind)
    .where("job_key", "=", key)
    .executeTakeFirst();
  return row ? must(parseRow(JobRowSchema, "jobs", `${kind}/${key}`, row)) : undefined;
}

export async function readOutput(t: Tx, threadId: string): Promise<Stage1Row | undefined> {
  const row = await t.selectFrom("stage1_outputs").selectAll().where("thread_id", "=", threadId).executeTakeFirst();
  return row ? must(parseRow(Stage1RowSchema, "stage1_outputs", threadId, row)) : undefined;
}

/** The jobs of `kind` among `keys` (a few hundred at most: one `in (...)` query), by key. */
export async function readJobs(t: Tx, kind: string, keys: string[]): Promise<Map<string, JobRow>> {
  if (!keys.length) return new Map();
  const rows = await t.selectFrom("jobs").selectAll().where("kind", "=", kind).where("job_key", "in", keys).execute();
  return new Map(
    must(parseRows(JobRowSchema, "jobs", (r) => `${kind}/${String(r.job_key)}`, rows)).map((j) => [j.job_key, j]),
  );
}

/** The outputs of `threadIds` (a few hundred at most), by thread id. */
export async function readOutputs(t: Tx, threadIds: string[]): Promise<Map<string, Stage1Row>> {
  if (!threadIds.length) return new Map();
  const rows = await t.selectFrom("stage1_outputs").selectAll().where("thread_id", "in", threadIds).execute();
  return new Map(
    must(parseRows(Stage1RowSchema, "stage1_outputs", (r) => String(r.thread_id), rows)).map((o) => [o.thread_id, o]),
  );
}

/** What a new jobs row holds where its insert says nothing: no holder, no times, the default retry budget. */
const EMPTY_JOB = {
  worker_id: null,
  ownership_token: null,
  started_at: null,
  finished_at: null,
  lease_until: null,
  heartbeat_at: null,
  retry_at: null,
  retry_remaining: DEFAULT_RETRY_BUDGET,
  last_error: null,
  input_watermark: null,
  last_success_watermark: null,
} satisfies Omit<JobsTable, "kind" | "job_key" | "status">;

export function insertJob(
  t: Tx,
  kind: string,
  key: string,
  values: Partial<Omit<JobsTable, "kind" | "job_key">> & { status: string },
): Promise<unknown> {
  return t
    .insertInto("jobs")
    .values({ ...EMPTY_JOB, ...values, kind, job_key: key })
    .execute();
}

export function setJob(
  t: Tx,
  kind: string,
  key: string,
  values: Partial<Omit<JobsTable, "kind" | "job_key">>,
): Promise<unknown> {
  return t.updateTable("jobs").set(values).where("kind", "=", kind).where("job_key", "=", key).execute();
}

/** The job, when it is running under `token`; undefined when the claim was lost. */
export async function ownedRunning(t: Tx, kind: string, key: string, token: string): Promise<JobRow | undefined> {
  const job = await readJob(t, kind, key);
  return job && job.status === "running" && job.ownership_token === token ? job : undefined;
}
