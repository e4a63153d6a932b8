/** The rollout catalog the scan fills (`memory_threads`): upserts, lookups, and the threads phase 1 may claim. */
import { ok, type Result } from "../util/result.ts";
import type { StateDb } from "./db.ts";
import { parseRow, parseRows, ThreadRowSchema, type ThreadRow } from "./rows.ts";
import { read, tx } from "./store-tx.ts";

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
  return read(async () => {
    const rows = await state.db.selectFrom("memory_threads").selectAll().execute();
    return parseRows(ThreadRowSchema, "memory_threads", (r) => String(r.id), rows);
  });
}

export async function getThread(state: StateDb, id: string): Promise<Result<ThreadRow | undefined>> {
  return read<ThreadRow | undefined>(async () => {
    const row = await state.db.selectFrom("memory_threads").selectAll().where("id", "=", id).executeTakeFirst();
    return row ? parseRow(ThreadRowSchema, "memory_threads", id, row) : ok(undefined);
  });
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
  return read(async () => {
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
  });
}
