/**
 * Leases in the jobs table (phase-1 claims and the phase-2 lock): whether one is live, whether a
 * claim respects it or takes it over (see holder.ts), and the list of every live lease.
 */
import { ok, type Result } from "../../util/result.ts";
import { type HolderReport, holderReport, takeOverReason } from "../holder.ts";
import type { StateDb } from "./db.ts";
import { type JobRow, JobRowSchema, parseRows } from "./rows.ts";
import { PHASE2_KIND, read } from "./tx.ts";

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

/** What a claim does about the job's lease: respect its live holder, or go on (taking it over if live). */
export type LeaseVerdict = { respect: HolderReport } | { tookOver?: TakeOver };

export function liveLease(job: JobRow, now: number): boolean {
  return job.status === "running" && job.lease_until !== null && job.lease_until > now;
}

export function judgeLease(job: JobRow, now: number, judge: TakeOverJudge = takeOverReason): LeaseVerdict {
  if (!liveLease(job, now)) return {};
  const reason = judge(job, now);
  if (reason === undefined) return { respect: holderReport(job, now) };
  return { tookOver: { holder: holderReport(job, now), reason } };
}

/** Every live lease (phase-1 claims and the phase-2 lock), the phase-2 lock first. */
export async function listLeases(state: StateDb, now: number): Promise<Result<JobRow[]>> {
  return read(async () => {
    const rows = await state.db
      .selectFrom("jobs")
      .selectAll()
      .where("status", "=", "running")
      .where("lease_until", ">", now)
      .orderBy("kind")
      .orderBy("started_at")
      .execute();
    const jobs = parseRows(JobRowSchema, "jobs", (r) => `${String(r.kind)}/${String(r.job_key)}`, rows);
    if ("error" in jobs) return jobs;
    return ok([...jobs.ok.filter((j) => j.kind === PHASE2_KIND), ...jobs.ok.filter((j) => j.kind !== PHASE2_KIND)]);
  });
}
