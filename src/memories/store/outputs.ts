/**
 * Stage-1 outputs (`stage1_outputs`): phase 2's input selection, listing, usage counts,
 * retention pruning, forgetting one thread, and the counts `relay memories status` prints.
 */
import { ok, type Result } from "../../util/result.ts";
import type { StateDb } from "./db.ts";
import { enqueueGlobal } from "./phase2.ts";
import { parseRow, parseRows, type Stage1Row, Stage1RowSchema, type ThreadRow, ThreadRowSchema } from "./rows.ts";
import { read, readOutput, STAGE1_KIND, tx } from "./tx.ts";

export interface SelectedOutput extends Stage1Row {
  thread: ThreadRow;
}

/** The thread columns `selectPhase2Inputs` joins in, each as `t_<column>`. */
const THREAD_COLUMNS = [
  "origin",
  "rollout_path",
  "source",
  "cwd",
  "git_branch",
  "created_at_ms",
  "updated_at_ms",
  "memory_mode",
  "host",
] as const;

/** Top `n` by usage count, then recency, inside `maxUnusedDays`; returned sorted by thread id. */
export async function selectPhase2Inputs(
  state: StateDb,
  n: number,
  maxUnusedDays: number,
  now: number,
): Promise<Result<SelectedOutput[]>> {
  const cutoff = now - Math.max(0, maxUnusedDays) * 86_400;
  return read(async () => {
    const rows = await state.db
      .selectFrom("stage1_outputs as o")
      .innerJoin("memory_threads as t", "t.id", "o.thread_id")
      .selectAll("o")
      .select([
        "t.origin as t_origin",
        "t.rollout_path as t_rollout_path",
        "t.source as t_source",
        "t.cwd as t_cwd",
        "t.git_branch as t_git_branch",
        "t.created_at_ms as t_created_at_ms",
        "t.updated_at_ms as t_updated_at_ms",
        "t.memory_mode as t_memory_mode",
        "t.host as t_host",
      ])
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
    return firstNonEmpty(rows, n);
  });
}

/** The first `n` rows with a memory or a summary, parsed with their thread, sorted by thread id. */
function firstNonEmpty(rows: Record<string, unknown>[], n: number): Result<SelectedOutput[]> {
  const out: SelectedOutput[] = [];
  for (const row of rows) {
    if (out.length >= Math.max(0, n)) break;
    const p = parseRow(Stage1RowSchema, "stage1_outputs", String(row.thread_id), row);
    if ("error" in p) return p;
    if (p.ok.raw_memory.trim() === "" && p.ok.rollout_summary.trim() === "") continue;
    const thread: Record<string, unknown> = { id: row.thread_id };
    for (const c of THREAD_COLUMNS) thread[c] = row[`t_${c}`];
    const th = parseRow(ThreadRowSchema, "memory_threads", p.ok.thread_id, thread);
    if ("error" in th) return th;
    out.push({ ...p.ok, thread: th.ok });
  }
  out.sort((a, b) => (a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0));
  return ok(out);
}

export async function listOutputs(state: StateDb): Promise<Result<Stage1Row[]>> {
  return read(async () => {
    const rows = await state.db
      .selectFrom("stage1_outputs")
      .selectAll()
      .orderBy("source_updated_at", "desc")
      .orderBy("thread_id", "desc")
      .execute();
    return parseRows(Stage1RowSchema, "stage1_outputs", (r) => String(r.thread_id), rows);
  });
}

export async function getOutput(state: StateDb, threadId: string): Promise<Result<Stage1Row | undefined>> {
  return read(async () => ok(await readOutput(state.db, threadId)));
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
export async function pruneStage1(
  state: StateDb,
  maxUnusedDays: number,
  limit: number,
  now: number,
): Promise<Result<number>> {
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
    const out = await t
      .selectFrom("stage1_outputs")
      .select("thread_id")
      .where("thread_id", "=", threadId)
      .executeTakeFirst();
    const job = await t
      .selectFrom("jobs")
      .select("job_key")
      .where("kind", "=", STAGE1_KIND)
      .where("job_key", "=", threadId)
      .executeTakeFirst();
    await t.deleteFrom("stage1_outputs").where("thread_id", "=", threadId).execute();
    await t.deleteFrom("jobs").where("kind", "=", STAGE1_KIND).where("job_key", "=", threadId).execute();
    const th = await t.selectFrom("memory_threads").select("id").where("id", "=", threadId).executeTakeFirst();
    if (th)
      await t.updateTable("memory_threads").set({ memory_mode: "forgotten" }).where("id", "=", threadId).execute();
    else {
      // Not scanned yet: a placeholder keeps the scan from enabling it later.
      await t
        .insertInto("memory_threads")
        .values({
          id: threadId,
          origin: "forgotten",
          rollout_path: "(not scanned)",
          source: "unknown",
          cwd: "",
          git_branch: null,
          created_at_ms: now * 1000,
          updated_at_ms: 0,
          memory_mode: "forgotten",
          host: "",
        })
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
  return read(async () => {
    const threads = await state.db
      .selectFrom("memory_threads")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    const outputs = await state.db
      .selectFrom("stage1_outputs")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    const jobs = await state.db
      .selectFrom("jobs")
      .select(["status", (eb) => eb.fn.countAll().as("n")])
      .where("kind", "=", STAGE1_KIND)
      .groupBy("status")
      .execute();
    const byStatus: Record<string, number> = {};
    for (const j of jobs) byStatus[String(j.status)] = Number(j.n);
    return ok({ threads: Number(threads?.n ?? 0), outputs: Number(outputs?.n ?? 0), jobs: byStatus });
  });
}
