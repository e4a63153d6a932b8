/**
 * What the orchestrator keeps after every handoff: the run's index (index-files.ts), then a
 * checkpoint (checkpoints.ts) that includes it. Neither stops the run when it fails (a full
 * disk, say): the run goes on and the failure is reported as a warning.
 */
import { errorMessage } from "../util/result.ts";
import { ALL, type ChangeFeed } from "./change-feed.ts";
import type { CheckpointTrigger } from "./checkpoint-format.ts";
import type { Snapshotter } from "./checkpoint-tree.ts";
import { type Checkpoint, latestCheckpoint, takeCheckpoint } from "./checkpoints.ts";
import { writeIndexes } from "./index-files.ts";
import type { RunStore } from "./run-store.ts";

export interface HandoffRecord {
  checkpoint?: Checkpoint;
  warnings: string[];
}

/**
 * On resume: a checkpoint of the step the run stands at, unless the newest one is of it. Only
 * between steps (nothing in flight), where the store is exactly as the last handoff left it.
 */
export async function catchUpCheckpoint(store: RunStore): Promise<HandoffRecord | undefined> {
  const st = store.state;
  if (st.inflight || !st.pending || st.deliverable) return undefined;
  const latest = await latestCheckpoint(store.dir).catch(() => undefined);
  if (latest?.handoff === st.handoffs && latest.turn === st.turns) return undefined;
  return recordHandoff(
    store,
    "resume",
    `resumed at step ${st.handoffs} (no checkpoint of it yet); next: ${st.pending.type}`,
  );
}

/**
 * The index, then a checkpoint. `feed` and `snapshotter` (a driver's, kept between handoffs)
 * make both cost what changed since the last handoff; without them everything is looked at.
 */
export async function recordHandoff(
  store: RunStore,
  trigger: CheckpointTrigger,
  summary: string,
  kept?: { feed: ChangeFeed; snapshotter: Snapshotter },
): Promise<HandoffRecord> {
  const warnings: string[] = [];
  const changes = kept ? await kept.feed.take() : ALL;
  let written: string[] = [];
  try {
    written = await writeIndexes(store, changes);
  } catch (e) {
    warnings.push(`could not write the run's index files: ${errorMessage(e)}`);
  }
  // The index files just written are in this checkpoint; the feed reports them only at the next take.
  const snapshot = kept
    ? {
        snapshotter: kept.snapshotter,
        changes: changes.all ? changes : { all: false as const, paths: new Set([...changes.paths, ...written]) },
      }
    : undefined;
  const c = await takeCheckpoint(store, trigger, summary, snapshot);
  if ("error" in c) warnings.push(c.error.message);
  return "ok" in c ? { checkpoint: c.ok, warnings } : { warnings };
}
