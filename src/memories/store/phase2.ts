/**
 * The phase-2 global job: enqueueing it (its input watermark only moves forward), its lock
 * (claim, heartbeat, failure, success with the exact selection snapshot), and reading it.
 */
import { randomUUID } from "../../util/random.ts";
import { ok, type Result } from "../../util/result.ts";
import type { HolderReport } from "../holder.ts";
import type { StateDb, Tx } from "./db.ts";
import { judgeLease, type TakeOver, type TakeOverJudge } from "./leases.ts";
import type { JobRow } from "./rows.ts";
import {
  DEFAULT_RETRY_BUDGET,
  insertJob,
  ownedRunning,
  PHASE2_KEY,
  PHASE2_KIND,
  read,
  readJob,
  setJob,
  tx,
} from "./tx.ts";

export type Phase2Claim =
  | { kind: "claimed"; token: string; inputWatermark: number; tookOver?: TakeOver }
  | { kind: "skipped_retry_unavailable" }
  | { kind: "skipped_cooldown" }
  | { kind: "skipped_running"; holder: HolderReport };

/** Marks the global job pending; its input watermark only moves forward. */
export async function enqueueGlobal(t: Tx, watermark: number): Promise<void> {
  const job = await readJob(t, PHASE2_KIND, PHASE2_KEY);
  if (!job) {
    await insertJob(t, PHASE2_KIND, PHASE2_KEY, {
      status: "pending",
      input_watermark: watermark,
      last_success_watermark: 0,
    });
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
    const lease = {
      status: "running",
      worker_id: r.workerId,
      ownership_token: token,
      started_at: r.now,
      lease_until: r.now + r.leaseSeconds,
      heartbeat_at: r.now,
    };
    if (!job) {
      await insertJob(t, PHASE2_KIND, PHASE2_KEY, { ...lease, input_watermark: 0, last_success_watermark: 0 });
      return { kind: "claimed", token, inputWatermark: 0 } as const;
    }
    if (job.retry_at !== null && job.retry_at > r.now) return { kind: "skipped_retry_unavailable" } as const;
    const verdict = judgeLease(job, r.now, r.takeOver);
    if ("respect" in verdict) return { kind: "skipped_running", holder: verdict.respect } as const;
    if (
      job.status !== "running" &&
      job.last_error === null &&
      job.finished_at !== null &&
      job.finished_at > r.now - r.cooldownSeconds
    ) {
      return { kind: "skipped_cooldown" } as const;
    }
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { ...lease, retry_at: null, last_error: null, finished_at: null });
    const claimed = { kind: "claimed", token, inputWatermark: job.input_watermark ?? 0 } as const;
    return verdict.tookOver ? { ...claimed, tookOver: verdict.tookOver } : claimed;
  });
}

export async function heartbeatPhase2(
  state: StateDb,
  token: string,
  leaseSeconds: number,
  now: number,
): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    if (!(await ownedRunning(t, PHASE2_KIND, PHASE2_KEY, token))) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, { lease_until: now + leaseSeconds, heartbeat_at: now });
    return true;
  });
}

export async function markPhase2Failed(
  state: StateDb,
  token: string,
  reason: string,
  retryDelaySeconds: number,
  now: number,
): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await readJob(t, PHASE2_KIND, PHASE2_KEY);
    if (!job || !(job.ownership_token === token || job.ownership_token === null)) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, {
      status: "error",
      finished_at: now,
      lease_until: null,
      retry_at: now + retryDelaySeconds,
      retry_remaining: Math.max(job.retry_remaining - 1, 0),
      last_error: reason.slice(0, 2000),
    });
    return true;
  });
}

export interface SelectedRef {
  threadId: string;
  sourceUpdatedAt: number;
}

/** Completes the owned run: the success watermark never moves backwards; the selection snapshot is exact. */
export async function markPhase2Succeeded(
  state: StateDb,
  token: string,
  completedWatermark: number,
  selected: SelectedRef[],
  now: number,
): Promise<Result<boolean>> {
  return tx(state, async (t) => {
    const job = await ownedRunning(t, PHASE2_KIND, PHASE2_KEY, token);
    if (!job) return false;
    await setJob(t, PHASE2_KIND, PHASE2_KEY, {
      status: "done",
      finished_at: now,
      lease_until: null,
      last_error: null,
      last_success_watermark: Math.max(job.last_success_watermark ?? 0, completedWatermark),
    });
    await t
      .updateTable("stage1_outputs")
      .set({ selected_for_phase2: 0, selected_for_phase2_source_updated_at: null })
      .where("selected_for_phase2", "!=", 0)
      .execute();
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
  return read(async () => ok(await readJob(state.db, PHASE2_KIND, PHASE2_KEY)));
}
