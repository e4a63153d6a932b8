/**
 * A driven run's checkpoints: the change feed and snapshotter kept between handoffs (so that a
 * handoff's index and checkpoint cost what changed since the last), the checkpoint each handoff
 * records, the checkpoints' repository packed in the background, and a garbage collection now
 * and then.
 */

import { ChangeFeed } from "../change-feed.ts";
import { CHECKPOINT_DIRS, type CheckpointTrigger } from "../checkpoint-format.ts";
import { PACK_LOOSE } from "../checkpoint-pack.ts";
import { Snapshotter } from "../checkpoint-tree.ts";
import { gitdirOf, initCheckpoints } from "../checkpoints.ts";
import { loadGit, looseWritten, packedNow } from "../git-store.ts";
import { recordHandoff } from "../handoff-record.ts";
import { packInChild } from "../pack-run.ts";
import type { RunStore } from "../run-store.ts";
import type { InftyOptions } from "./options.ts";

/** Handoffs between two full garbage collections of a driver (see collectNowAndThen). */
const GC_EVERY = 20;

export class RunCheckpoints {
  /** Kept between handoffs, so that a handoff's index and checkpoint cost what changed since the last. */
  private kept: { feed: ChangeFeed; snapshotter: Snapshotter } | undefined;
  /** The checkpoints' repository being packed, in the background. */
  private packing: Promise<void> = Promise.resolve();
  private sinceGc = 0;

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
  ) {}

  /** Creates the checkpoints' repository if need be, starts the change feed, and packs what a previous process left loose. */
  async open(): Promise<void> {
    await initCheckpoints(this.store.dir).catch((e: Error) =>
      this.o.report({ type: "warning", message: `could not create the run's checkpoint repository: ${e.message}` }),
    );
    this.kept = {
      feed: await ChangeFeed.start(this.store.dir, CHECKPOINT_DIRS),
      snapshotter: await Snapshotter.open(await loadGit(), gitdirOf(this.store.dir)),
    };
    // Loose objects a previous process left (it stopped before packing them) are packed now.
    this.pack(false);
  }

  async checkpoint(trigger: CheckpointTrigger, summary: string): Promise<void> {
    // A pack under way finishes before a checkpoint writes to the repository.
    await this.packing;
    const r = await recordHandoff(this.store, trigger, summary, this.kept);
    for (const message of r.warnings) this.o.report({ type: "warning", message });
    if (!r.checkpoint) return;
    this.o.report({ type: "checkpoint", name: r.checkpoint.id, trigger, summary });
    await this.store.log({ type: "checkpoint", name: r.checkpoint.id, trigger, summary });
    if (looseWritten() >= PACK_LOOSE) this.pack(true);
    this.collectNowAndThen();
  }

  /** Stops the change feed and waits for a pack under way. */
  async close(): Promise<void> {
    this.kept?.feed.close();
    await this.packing;
  }

  /**
   * A full garbage collection every GC_EVERY handoffs, between steps. Measured over 400 turns:
   * the live heap stays at 14-16 MB, but left to itself Bun lets dead model requests (each a
   * JSON of the Solver's whole history) pile up to 60 MB and keeps the pages, so the driver's
   * RSS drifted up by a third; collected now and then it stays flat.
   */
  private collectNowAndThen(): void {
    if (++this.sinceGc < GC_EVERY) return;
    this.sinceGc = 0;
    (globalThis as { Bun?: { gc(full: boolean): void } }).Bun?.gc(true);
  }

  /**
   * Packs the checkpoints' repository in the background, in a child process (../pack-run.ts says
   * why); `force`: this process wrote enough loose objects, else only if enough are there.
   */
  private pack(force: boolean): void {
    packedNow();
    this.packing = packInChild(this.o.home, this.store, force, this.o.fleetDb).then((why) => {
      if (why)
        this.o.report({
          type: "warning",
          message: `could not pack the run's checkpoint repository (its loose objects stay as they are): ${why}`,
        });
    });
  }
}
