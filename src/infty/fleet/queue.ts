/**
 * The fleet's queue of runs (`infty_runs`) and its workers (`infty_workers`). A run is
 * `queued` until a worker claims it (`running`); the process that drives it sets how it ended:
 * `complete`, `failed` (resumable by hand), `queued` again when it was interrupted (another
 * worker resumes it), or `parked` with the reason when it cannot go on by itself. A `running`
 * run whose driver is gone (its lease released, or silent past the timeout, or never taken) is
 * claimable again: that claim is a takeover, and a run taken over too often in a row is parked.
 * Claims skip rows another worker is claiming (`FOR UPDATE SKIP LOCKED`): no two workers ever
 * claim the same run, and none waits for another.
 */
import os from "node:os";
import { type Selectable, sql, type Transaction } from "kysely";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import { pidAlive } from "../lease.ts";
import type { FleetDb, FleetTables, RunsTable, WorkersTable } from "./db.ts";
import type { FleetRun, FleetWorker } from "./view-format.ts";

export type { FleetRun, FleetWorker } from "./view-format.ts";

export const RUN_STATES = ["queued", "running", "complete", "failed", "stopped", "parked"] as const;
export type RunState = (typeof RUN_STATES)[number];

/** Takeovers in a row after which a run is parked instead of claimed again. */
export const MAX_TAKEOVERS = 3;

export interface Submission {
  id: string;
  objective: string;
  args: string[];
  resumeArgs: string[];
  priority: number;
  submitter: string;
  cwd: string;
  /** The repository to clone for the run, and the commit to start from. */
  repo?: { source: string; commit?: string };
}

/** A claimed run: drive it with `relay infty run` (first time) or `resume`. */
export interface Claim {
  id: string;
  objective: string;
  args: string[];
  resumeArgs: string[];
  cwd: string;
  repo?: { source: string; commit?: string };
  resume: boolean;
  /** A driver took its lease, so the run was created (its store must be under the runs root). */
  created: boolean;
  /** Set when the run was running under a driver that is gone. */
  tookOver?: string;
}

/** A failed query, as every fleet function reports it: what was being done, and where. */
export function dbError(what: string, fleet: FleetDb, e: unknown) {
  return err("fleet_db", `${what} in the fleet DB ${fleet.location} failed: ${errorMessage(e)}`);
}

export async function submitRun(fleet: FleetDb, s: Submission): Promise<Result<void>> {
  try {
    const inserted = await fleet.db
      .insertInto("infty_runs")
      .values({
        id: s.id,
        objective: s.objective,
        // jsonb columns take JSON text.
        args: JSON.stringify(s.args) as unknown as string[],
        resume_args: JSON.stringify(s.resumeArgs) as unknown as string[],
        priority: s.priority,
        submitter: s.submitter,
        cwd: s.cwd,
        repo: s.repo?.source ?? null,
        repo_commit: s.repo?.commit ?? null,
        state: "queued",
      })
      .onConflict((oc) => oc.column("id").doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0)
      return err("run_exists", `run ${s.id} is already in the fleet; pick another --run-id`);
    return ok(undefined);
  } catch (e) {
    return dbError(`submitting run ${s.id}`, fleet, e);
  }
}

/**
 * Runs whose driver is gone: claimed longer than `staleMs` ago (a new driver gets that long to
 * take its lease) and its lease never taken, released, or silent for `staleMs`.
 */
const driverGone = (staleMs: number) => sql<boolean>`(
  r.claimed_at < clock_timestamp() - make_interval(secs => ${staleMs / 1000})
  and (l.run_id is null or l.released_at is not null
    or l.heartbeat_at < clock_timestamp() - make_interval(secs => ${staleMs / 1000})))`;

/** How claims go: the lease timeout, how many takeovers in a row park a run, the cap per submitter. */
export interface ClaimPolicy {
  staleMs: number;
  maxTakeovers?: number;
  /** Runs one submitter may have running at once across the fleet (default: no cap). */
  perSubmitter?: number;
}

type Candidate = Selectable<RunsTable> & { lease_holder: string | null };

/**
 * The next run for `worker`, highest priority then oldest first; undefined when there is none.
 * A submitter at the cap is passed over: its count is taken under a lock per submitter, so two
 * workers claiming at once cannot both take its last place.
 */
export async function claimRun(
  fleet: FleetDb,
  worker: string,
  policy: ClaimPolicy,
): Promise<Result<Claim | undefined>> {
  const maxTakeovers = policy.maxTakeovers ?? MAX_TAKEOVERS;
  try {
    return ok(
      await fleet.db.transaction().execute(async (tx) => {
        const full: string[] = [];
        for (;;) {
          const found = await sql<Candidate>`
            select r.*, l.holder_host || ' pid ' || l.holder_pid as lease_holder
            from infty_runs r left join infty_leases l on l.run_id = r.id
            where (r.state = 'queued' or (r.state = 'running' and ${driverGone(policy.staleMs)}))
              and not (r.submitter = any(${full}::text[]))
            order by r.priority desc, r.submitted_at, r.id
            limit 1 for update of r skip locked`.execute(tx);
          const row = found.rows[0];
          if (!row) return undefined;
          if (policy.perSubmitter !== undefined && (await atCap(tx, row, policy.perSubmitter))) {
            full.push(row.submitter);
            continue;
          }
          const takeovers = row.state === "running" ? row.takeovers + 1 : row.takeovers;
          if (takeovers > maxTakeovers) {
            await park(tx, row, maxTakeovers);
            continue;
          }
          return take(tx, row, worker, takeovers);
        }
      }),
    );
  } catch (e) {
    return dbError(`claiming a run for worker ${worker}`, fleet, e);
  }
}

/** Whether `row`'s submitter already has `cap` runs running (counted under its lock). */
async function atCap(tx: Transaction<FleetTables>, row: Candidate, cap: number): Promise<boolean> {
  await sql`select pg_advisory_xact_lock(hashtext(${`relay-infty-submitter:${row.submitter}`}))`.execute(tx);
  const running = await sql<{ n: number }>`
    select count(*)::int as n from infty_runs
    where submitter = ${row.submitter} and state = 'running' and id <> ${row.id}`.execute(tx);
  return (running.rows[0]?.n ?? 0) >= cap;
}

async function park(tx: Transaction<FleetTables>, row: Candidate, maxTakeovers: number): Promise<void> {
  await tx
    .updateTable("infty_runs")
    .set({
      state: "parked",
      worker: null,
      reason: `parked after ${maxTakeovers} takeovers in a row (its drivers keep dying; last on ${row.worker ?? "?"}): see relay infty logs ${row.id}, then relay infty resume ${row.id} by hand`,
      updated_at: sql`now()`,
    })
    .where("id", "=", row.id)
    .execute();
}

/** Marks `row` running under `worker` and says how to drive it. */
async function take(tx: Transaction<FleetTables>, row: Candidate, worker: string, takeovers: number): Promise<Claim> {
  const tookOver =
    row.state === "running"
      ? `taken over by worker ${worker} from worker ${row.worker ?? "?"} (${row.lease_holder ?? "no driver"}, gone)`
      : undefined;
  await tx
    .updateTable("infty_runs")
    .set({
      state: "running",
      worker,
      claimed_at: sql`clock_timestamp()`,
      started: true,
      takeovers,
      ...(tookOver ? { reason: tookOver } : {}),
      updated_at: sql`now()`,
    })
    .where("id", "=", row.id)
    .execute();
  return {
    id: row.id,
    objective: row.objective,
    args: row.args,
    resumeArgs: row.resume_args,
    cwd: row.cwd,
    ...(row.repo ? { repo: { source: row.repo, ...(row.repo_commit ? { commit: row.repo_commit } : {}) } } : {}),
    resume: row.started,
    created: row.lease_holder !== null,
    ...(tookOver ? { tookOver } : {}),
  };
}

/** What the driver of run `id` ends it as; `reason` says why for failed and parked runs. */
export async function finishRun(fleet: FleetDb, id: string, state: RunState, reason?: string): Promise<Result<void>> {
  try {
    await fleet.db
      .updateTable("infty_runs")
      .set({
        state,
        worker: state === "running" ? undefined : null,
        reason: reason ?? null,
        // A run that progressed to an end is no longer being bounced between drivers.
        ...(state === "complete" || state === "queued" ? { takeovers: 0 } : {}),
        updated_at: sql`now()`,
      })
      .where("id", "=", id)
      .execute();
    return ok(undefined);
  } catch (e) {
    return dbError(`recording run ${id} as ${state}`, fleet, e);
  }
}

export async function listRuns(fleet: FleetDb): Promise<Result<FleetRun[]>> {
  try {
    const rows = await sql<
      Selectable<RunsTable> & {
        epoch: number | null;
        holder_host: string | null;
        holder_pid: number | null;
        age_s: number | null;
        released_at: Date | null;
      }
    >`select r.*, l.epoch, l.holder_host, l.holder_pid, l.released_at,
        extract(epoch from (clock_timestamp() - l.heartbeat_at))::float8 as age_s
      from infty_runs r left join infty_leases l on l.run_id = r.id
      order by r.submitted_at desc, r.id`.execute(fleet.db);
    return ok(
      rows.rows.map((r) => ({
        id: r.id,
        state: r.state,
        worker: r.worker,
        priority: r.priority,
        submitter: r.submitter,
        objective: r.objective,
        repo: r.repo,
        reason: r.reason,
        takeovers: r.takeovers,
        submitted_at: r.submitted_at.toISOString(),
        updated_at: r.updated_at.toISOString(),
        lease:
          r.epoch === null
            ? null
            : {
                epoch: r.epoch,
                holder: `pid ${r.holder_pid} on ${r.holder_host}`,
                heartbeat_age_s: Math.round(r.age_s ?? 0),
                released: r.released_at !== null,
              },
      })),
    );
  } catch (e) {
    return dbError("listing runs", fleet, e);
  }
}

/** Registers this process as worker `name`; refused while a live worker has that name. */
export async function registerWorker(
  fleet: FleetDb,
  name: string,
  maxRuns: number,
  staleMs: number,
): Promise<Result<void>> {
  try {
    return await fleet.db.transaction().execute(async (tx) => {
      const prior = await sql<WorkersTable & { age_ms: number }>`
        select *, (extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::float8 as age_ms
        from infty_workers where name = ${name} for update`.execute(tx);
      const p = prior.rows[0];
      if (p && p.stopped_at === null && p.age_ms < staleMs && !(p.host === os.hostname() && !pidAlive(p.pid)))
        return err(
          "worker_live",
          `worker ${name} is already running (pid ${p.pid} on ${p.host}); give this one another --name, or stop that one first`,
        );
      const row = { host: os.hostname(), pid: process.pid, max_runs: maxRuns, stopped_at: null };
      await tx
        .insertInto("infty_workers")
        .values({ name, ...row, started_at: sql`clock_timestamp()`, heartbeat_at: sql`clock_timestamp()` })
        .onConflict((oc) =>
          oc
            .column("name")
            .doUpdateSet({ ...row, started_at: sql`clock_timestamp()`, heartbeat_at: sql`clock_timestamp()` }),
        )
        .execute();
      return ok(undefined);
    });
  } catch (e) {
    return dbError(`registering worker ${name}`, fleet, e);
  }
}

export async function beatWorker(fleet: FleetDb, name: string, stopped = false): Promise<Result<void>> {
  try {
    await fleet.db
      .updateTable("infty_workers")
      .set({ heartbeat_at: sql`clock_timestamp()`, ...(stopped ? { stopped_at: sql`clock_timestamp()` } : {}) })
      .where("name", "=", name)
      .where("pid", "=", process.pid)
      .execute();
    return ok(undefined);
  } catch (e) {
    return dbError(`renewing worker ${name}`, fleet, e);
  }
}

export async function listWorkers(fleet: FleetDb): Promise<Result<FleetWorker[]>> {
  try {
    const rows = await sql<WorkersTable & { age_s: number; runs: number }>`
      select w.*, extract(epoch from (clock_timestamp() - w.heartbeat_at))::float8 as age_s,
        (select count(*)::int from infty_runs r where r.worker = w.name and r.state = 'running') as runs
      from infty_workers w order by w.name`.execute(fleet.db);
    return ok(
      rows.rows.map((w) => ({
        name: w.name,
        host: w.host,
        pid: w.pid,
        max_runs: w.max_runs,
        runs: w.runs,
        started_at: w.started_at.toISOString(),
        heartbeat_age_s: Math.round(w.age_s),
        stopped: w.stopped_at !== null,
      })),
    );
  } catch (e) {
    return dbError("listing workers", fleet, e);
  }
}

/**
 * A driver of run `id` ended without saying how (it crashed or was killed): queued again for
 * the next claim, counted as a takeover, and parked once there were too many in a row.
 */
export async function requeueAfterCrash(
  fleet: FleetDb,
  id: string,
  worker: string,
  why: string,
  maxTakeovers = MAX_TAKEOVERS,
): Promise<Result<void>> {
  try {
    await sql`update infty_runs set
        takeovers = takeovers + 1,
        state = case when takeovers + 1 > ${maxTakeovers} then 'parked' else 'queued' end,
        reason = case when takeovers + 1 > ${maxTakeovers}
          then ${`parked after ${maxTakeovers} drivers in a row ended without finishing (last: ${why}): see relay infty logs ${id}, then relay infty resume ${id} by hand`}
          else ${`its driver on worker ${worker} ${why}; queued again`} end,
        worker = null, updated_at = now()
      where id = ${id} and state = 'running' and worker = ${worker}`.execute(fleet.db);
    return ok(undefined);
  } catch (e) {
    return dbError(`requeueing run ${id}`, fleet, e);
  }
}
