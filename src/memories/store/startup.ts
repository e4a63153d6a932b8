/**
 * The start-up pass's slot: one jobs row (kind memory_startup) saying when the last pass began
 * and who ran it. Never leased; of concurrent start-ups, the first to record one runs.
 */

import type { Result } from "../../util/result.ts";
import type { StateDb } from "./db.ts";
import { insertJob, readJob, setJob, tx } from "./tx.ts";

export const STARTUP_KIND = "memory_startup";
export const STARTUP_KEY = "global";

export type StartupSlot = { kind: "claimed" } | { kind: "skipped_interval"; lastStartedAt: number };

/** Records that a start-up pass begins now, unless the last one began less than `intervalSeconds` ago. */
export async function claimStartupSlot(
  state: StateDb,
  r: { workerId: string; intervalSeconds: number; now: number },
): Promise<Result<StartupSlot>> {
  return tx(state, async (t) => {
    const job = await readJob(t, STARTUP_KIND, STARTUP_KEY);
    if (job?.started_at != null && job.started_at > r.now - r.intervalSeconds)
      return { kind: "skipped_interval", lastStartedAt: job.started_at } as const;
    const values = { status: "done", worker_id: r.workerId, started_at: r.now, finished_at: r.now };
    if (job) await setJob(t, STARTUP_KIND, STARTUP_KEY, values);
    else await insertJob(t, STARTUP_KIND, STARTUP_KEY, { ...values, retry_remaining: 0 });
    return { kind: "claimed" } as const;
  });
}
