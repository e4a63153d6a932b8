/**
 * Acting on a fleet run from any machine: `relay infty stop <id>` and `relay infty note <id>`
 * (and the live view's actions) with a fleet DB record a request in `infty_requests`; the run's
 * driver, wherever it runs, carries it out at its next look (every few seconds) and marks it
 * done. A stop of a run still queued needs no driver: it is marked stopped at once.
 */
import { sql, type Transaction } from "kysely";
import { err, ok, type Result } from "../../util/result.ts";
import { noteText } from "../operator.ts";
import type { FleetDb, FleetTables } from "./db.ts";
import { dbError } from "./queue.ts";

export type RequestKind = "stop" | "note";

export interface RunRequest {
  id: number;
  kind: RequestKind;
  text: string | null;
  from: string;
}

export interface Asked {
  message: string;
}

/** The run's state and worker, locked for the caller's transaction; undefined when the fleet has no such run. */
async function lockedRun(tx: Transaction<FleetTables>, id: string) {
  const r = await sql<{ state: string; worker: string | null }>`
    select state, worker from infty_runs where id = ${id} for update`.execute(tx);
  return r.rows[0];
}

/** Asks run `id` to stop after its current step (a queued one is stopped at once); it stays resumable. */
export async function requestStop(fleet: FleetDb, id: string, from: string): Promise<Result<Asked | undefined>> {
  try {
    return await fleet.db.transaction().execute(async (tx) => {
      const run = await lockedRun(tx, id);
      if (!run) return ok(undefined);
      if (run.state === "queued") {
        await tx
          .updateTable("infty_runs")
          .set({
            state: "stopped",
            worker: null,
            reason: `stopped before it started (${from})`,
            updated_at: sql`now()`,
          })
          .where("id", "=", id)
          .execute();
        return ok({ message: `run ${id} was queued; it is stopped and no worker will take it` });
      }
      if (run.state !== "running") return err("conflict", `run ${id} is ${run.state} in the fleet; nothing to stop`);
      await tx
        .insertInto("infty_requests")
        .values({ run_id: id, kind: "stop", text: null, from_who: from, done_at: null })
        .execute();
      return ok({
        message: `asked run ${id} (on worker ${run.worker ?? "?"}) to stop after its current step; it stays resumable`,
      });
    });
  } catch (e) {
    return dbError(`asking run ${id} to stop`, fleet, e);
  }
}

/** Leaves a note for run `id`'s Director, delivered by its driver (now, or the next one). */
export async function requestNote(
  fleet: FleetDb,
  id: string,
  text: string,
  from: string,
): Promise<Result<Asked | undefined>> {
  const checked = noteText(text);
  if ("error" in checked) return checked;
  try {
    return await fleet.db.transaction().execute(async (tx) => {
      const run = await lockedRun(tx, id);
      if (!run) return ok(undefined);
      if (run.state === "complete") return err("conflict", `run ${id} is complete; no Director will read a note`);
      await tx
        .insertInto("infty_requests")
        .values({ run_id: id, kind: "note", text: checked.ok, from_who: from, done_at: null })
        .execute();
      const when =
        run.state === "running"
          ? "its driver hands it on within seconds"
          : `it is handed on when the run is driven again (it is ${run.state})`;
      return ok({ message: `note for the Director of run ${id} recorded in the fleet DB; ${when}` });
    });
  } catch (e) {
    return dbError(`leaving a note for run ${id}`, fleet, e);
  }
}

/** Queues run `id` again (stopped, failed or parked) for the next worker, which resumes it. */
export async function requeueRun(fleet: FleetDb, id: string, from: string): Promise<Result<Asked | undefined>> {
  try {
    return await fleet.db.transaction().execute(async (tx) => {
      const run = await lockedRun(tx, id);
      if (!run) return ok(undefined);
      if (!["stopped", "failed", "parked"].includes(run.state))
        return err(
          "conflict",
          `run ${id} is ${run.state} in the fleet; only a stopped, failed or parked run is queued again`,
        );
      await tx
        .updateTable("infty_runs")
        .set({ state: "queued", worker: null, takeovers: 0, reason: `queued again (${from})`, updated_at: sql`now()` })
        .where("id", "=", id)
        .execute();
      return ok({ message: `run ${id} is queued again; the next free worker resumes it` });
    });
  } catch (e) {
    return dbError(`queueing run ${id} again`, fleet, e);
  }
}

/** Requests for run `id` not carried out yet, oldest first. */
export async function waitingRequests(fleet: FleetDb, id: string): Promise<Result<RunRequest[]>> {
  try {
    const rows = await fleet.db
      .selectFrom("infty_requests")
      .select(["id", "kind", "text", "from_who"])
      .where("run_id", "=", id)
      .where("done_at", "is", null)
      .orderBy("id")
      .execute();
    return ok(rows.map((r) => ({ id: r.id, kind: r.kind as RequestKind, text: r.text, from: r.from_who })));
  } catch (e) {
    return dbError(`reading run ${id}'s requests`, fleet, e);
  }
}

/** Marks request `id` carried out. */
export async function requestDone(fleet: FleetDb, id: number): Promise<Result<void>> {
  try {
    await fleet.db.updateTable("infty_requests").set({ done_at: sql`now()` }).where("id", "=", id).execute();
    return ok(undefined);
  } catch (e) {
    return dbError(`marking request ${id} done`, fleet, e);
  }
}

/** Every `everyMs`, carries out run `runId`'s waiting requests: `stop()` for a stop, `deliver` for a note. */
export function watchRequests(
  fleet: FleetDb,
  runId: string,
  everyMs: number,
  act: { stop(from: string): void; deliver(r: RunRequest): Promise<Result<unknown>> },
): () => void {
  let busy = false;
  const look = async () => {
    if (busy) return;
    busy = true;
    try {
      const waiting = await waitingRequests(fleet, runId);
      for (const r of "ok" in waiting ? waiting.ok : []) {
        if (r.kind === "stop") act.stop(r.from);
        // A note waits while the run is not created yet (run_not_found); anything else is final.
        else if (r.kind === "note") {
          const done = await act.deliver(r);
          if ("error" in done && done.error.code === "run_not_found") continue;
        }
        await requestDone(fleet, r.id);
      }
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void look(), everyMs);
  void look();
  return () => clearInterval(timer);
}
