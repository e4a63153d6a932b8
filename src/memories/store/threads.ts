/** The rollout catalog the scan fills (`memory_threads`): upserts and lookups (which rows phase 1 may claim: eligibility.ts). */
import { ok, type Result } from "../../util/result.ts";
import type { StateDb } from "./db.ts";
import { parseRow, parseRows, type ThreadRow, ThreadRowSchema } from "./rows.ts";
import { read, tx } from "./tx.ts";

export async function upsertThreads(state: StateDb, threads: ThreadRow[]): Promise<Result<number>> {
  if (!threads.length) return ok(0);
  return tx(state, async (t) => {
    for (const chunk of chunksOfDistinctIds(threads, 100)) {
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

/**
 * `rows` in order, in chunks of at most `size` where no id repeats (a session in both homes):
 * Postgres refuses to upsert a row twice in one statement, and upserting the chunks in order
 * gives the same rows as upserting one row at a time.
 */
function chunksOfDistinctIds(rows: ThreadRow[], size: number): ThreadRow[][] {
  const chunks: ThreadRow[][] = [];
  let chunk: ThreadRow[] = [];
  let ids = new Set<string>();
  for (const r of rows) {
    if (chunk.length >= size || ids.has(r.id)) {
      chunks.push(chunk);
      chunk = [];
      ids = new Set();
    }
    chunk.push(r);
    ids.add(r.id);
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
}

export async function listThreads(state: StateDb): Promise<Result<ThreadRow[]>> {
  return read(async () => {
    const rows = await state.db.selectFrom("memory_threads").selectAll().execute();
    return parseRows(ThreadRowSchema, "memory_threads", (r) => String(r.id), rows);
  });
}

/** The rows of `ids` (a page of a few hundred at most: one `in (...)` query), by id. */
export async function getThreads(state: StateDb, ids: readonly string[]): Promise<Result<Map<string, ThreadRow>>> {
  if (!ids.length) return ok(new Map());
  return read(async () => {
    const rows = await state.db
      .selectFrom("memory_threads")
      .selectAll()
      .where("id", "in", [...ids])
      .execute();
    const parsed = parseRows(ThreadRowSchema, "memory_threads", (r) => String(r.id), rows);
    return "error" in parsed ? parsed : ok(new Map(parsed.ok.map((t) => [t.id, t])));
  });
}

export async function getThread(state: StateDb, id: string): Promise<Result<ThreadRow | undefined>> {
  return read<ThreadRow | undefined>(async () => {
    const row = await state.db.selectFrom("memory_threads").selectAll().where("id", "=", id).executeTakeFirst();
    return row ? parseRow(ThreadRowSchema, "memory_threads", id, row) : ok(undefined);
  });
}
