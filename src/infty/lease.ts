/**
 * One driver per run. A process that drives a run (`relay infty run` or `resume`) holds the
 * run's lease: who it is (pid, the process's start time, host), since when, its last heartbeat,
 * and an epoch that grows with every grant. Every write of run.json first checks that the lease
 * is still this process's at this epoch (fencing): a driver whose lease another process took
 * over stops at its next write, without touching the run.
 *
 * The lease is an interface (RunLease); lease-file.ts is the local implementation (a file in
 * the run store), the fleet backs it with Postgres.
 */
import os from "node:os";
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { procStatFields, START_TIME_FIELD } from "../util/proc-stat.ts";
import { err, type Result } from "../util/result.ts";

/** A lease without a heartbeat for this long is stale (the heartbeat comes every 15 s). */
export const LEASE_STALE_MS = 120_000;

export const LeaseHolderSchema = lazySchema(() =>
  z.object({
    pid: z.number().int().min(1),
    /** The process's start (clock ticks since boot, /proc); tells a reused pid from the holder. */
    start_time: z.string().nullable(),
    host: z.string(),
  }),
);
export type LeaseHolder = z.infer<typeof LeaseHolderSchema>;

export const LeaseRecordSchema = lazySchema(() =>
  z.object({
    version: z.literal(1),
    epoch: z.number().int().min(1),
    holder: LeaseHolderSchema,
    acquired_at: z.string(),
    heartbeat_at: z.string(),
    /** Set when the holder let go (the run ended or stopped); the next grant needs no takeover. */
    released_at: z.string().nullable().default(null),
  }),
);
export type LeaseRecord = z.infer<typeof LeaseRecordSchema>;

/** What a lease says about the run's driver now. */
export type LeaseView =
  | { state: "free" }
  | { state: "held"; record: LeaseRecord; heartbeatAgeMs: number }
  /** Held on paper, but its holder is gone: `why` says how that is known. */
  | { state: "stale"; record: LeaseRecord; heartbeatAgeMs: number; why: string };

/** A granted lease: the epoch this process drives at. */
export interface LeaseGrant {
  readonly epoch: number;
  /** Set when the grant took the run over from a holder that was gone: what happened to it. */
  readonly tookOver?: string;
  /** Fencing: an error value once the lease is no longer this process's at this epoch. */
  check(): Promise<Result<void>>;
  /** Renews the heartbeat (and fails as `check` does when the lease was taken over). */
  beat(): Promise<Result<void>>;
  /** Lets go of the run (when it ends or stops), if the lease is still this process's. */
  release(): Promise<void>;
}

export interface RunLease {
  /**
   * Takes the run for this process; refused (code `run_live`) while a live holder has it, saying
   * who holds it and how to stop it, then `then` (what to run once it is stopped).
   */
  acquire(then?: string): Promise<Result<LeaseGrant>>;
  /** The driver as the lease tells it, for status, list and the live view. */
  view(now?: number): Promise<LeaseView | undefined>;
}

/** This process as a lease holder. */
export function selfHolder(): LeaseHolder {
  return { pid: process.pid, start_time: processStart(process.pid), host: os.hostname() };
}

function processStart(pid: number): string | null {
  return procStatFields(pid)?.[START_TIME_FIELD] ?? null;
}

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

export const sameHolder = (a: LeaseHolder, b: LeaseHolder) =>
  a.pid === b.pid && a.host === b.host && a.start_time === b.start_time;

/**
 * Why the holder of `record` is gone, or undefined if it may still drive the run. On this host
 * a dead pid (or a pid now used by another process) says so at once; elsewhere only a
 * heartbeat older than LEASE_STALE_MS does.
 */
export function holderGone(record: LeaseRecord, now = Date.now(), staleMs = LEASE_STALE_MS): string | undefined {
  return goneAfter(record, now - Date.parse(record.heartbeat_at), staleMs);
}

/** holderGone, given the heartbeat's age as measured elsewhere (by the fleet DB's clock). */
function goneAfter(record: LeaseRecord, heartbeatAgeMs: number, staleMs: number): string | undefined {
  const gone = processGone(record.holder);
  if (gone) return gone;
  if (heartbeatAgeMs >= staleMs) return `no heartbeat since ${record.heartbeat_at}`;
  return undefined;
}

/** Why the holder's process is known to be gone (only on its own host), or undefined. */
export function processGone(h: LeaseHolder): string | undefined {
  if (h.host !== os.hostname()) return undefined;
  if (!pidAlive(h.pid)) return `driver pid ${h.pid} gone`;
  const start = processStart(h.pid);
  if (h.start_time !== null && start !== null && start !== h.start_time)
    return `driver pid ${h.pid} gone (the pid now belongs to another process)`;
  return undefined;
}

/** The view of a lease record. */
export function viewOf(record: LeaseRecord, now = Date.now()): LeaseView {
  return viewAt(record, now - Date.parse(record.heartbeat_at));
}

/**
 * The view of a lease record whose heartbeat is `heartbeatAgeMs` old: a fleet measures the age
 * with its database's clock, since the hosts' clocks may disagree.
 */
export function viewAt(record: LeaseRecord, heartbeatAgeMs: number, staleMs = LEASE_STALE_MS): LeaseView {
  if (record.released_at) return { state: "free" };
  const why = goneAfter(record, heartbeatAgeMs, staleMs);
  return why ? { state: "stale", record, heartbeatAgeMs, why } : { state: "held", record, heartbeatAgeMs };
}

/** Who drives a run, as people read it: `pid 123 on host h`. */
export function describeHolder(h: LeaseHolder): string {
  return h.host === os.hostname() ? `pid ${h.pid}` : `pid ${h.pid} on host ${h.host}`;
}

/** The refusal of a run another live process drives; `then` is what to run once it is stopped. */
export function liveRefusal(runId: string, v: { record: LeaseRecord; heartbeatAgeMs: number }, then: string) {
  const age = Math.round(v.heartbeatAgeMs / 1000);
  return err(
    "run_live",
    `run ${runId} is driven by ${describeHolder(v.record.holder)} (since ${v.record.acquired_at}, last heartbeat ${age} s ago), and only one process may drive or change a run at a time. Watch it with: relay infty logs ${runId} --follow; or stop it first (relay infty stop ${runId}, or Ctrl-C where it runs; it stays resumable), then: ${then}`,
  );
}

/** What a grant's fencing check says once the lease is no longer its own (`current`: the lease now). */
export function leaseLost(current: LeaseRecord | undefined) {
  const who =
    current && !current.released_at
      ? `${describeHolder(current.holder)} holds it now (epoch ${current.epoch})`
      : "its lease was released or removed";
  return err("lease_lost", `this process no longer drives the run: ${who}; it stops without writing anything more`);
}

/** Whether `current` is still the lease granted as `mine` (same epoch and holder, not released). */
export function stillOurs(mine: LeaseRecord, current: LeaseRecord | undefined): boolean {
  return (
    current !== undefined &&
    current.epoch === mine.epoch &&
    !current.released_at &&
    sameHolder(current.holder, mine.holder)
  );
}
