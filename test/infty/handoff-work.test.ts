/**
 * A handoff's cost must not grow with the run: the work of a handoff's index and checkpoint
 * (files stat'ed, folders listed, files read, files and objects written) is counted, never
 * timed, in a store of 40 files and in one of 2,000. A handoff of an unchanged store, and one
 * with a single new artifact, must cost the same in both.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { ChangeFeed } from "../../src/infty/change-feed.ts";
import { CHECKPOINT_DIRS } from "../../src/infty/checkpoint-format.ts";
import { Snapshotter } from "../../src/infty/checkpoint-tree.ts";
import { gitdirOf, initCheckpoints } from "../../src/infty/checkpoints.ts";
import { loadGit } from "../../src/infty/git-store.ts";
import { recordHandoff } from "../../src/infty/handoff-record.ts";
import { recordRound } from "../../src/infty/index-files.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { type Work, workBetween, workSoFar } from "../../src/infty/work-count.ts";
import { skipBecause } from "../support/skip.ts";

/** The work of one handoff after `change` in a store of `files` artifacts (and a claim per 20). */
async function handoffWork(files: number): Promise<{ unchanged: Work; oneNew: Work }> {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-handoff-work-"));
  try {
    const created = await RunStore.create(
      home,
      {
        run_id: "w",
        objective: "o",
        verifiers: 1,
        consensus: "all",
        max_turns: 10,
        max_wall_ms: 60_000,
        settings: undefined,
        role_timeout_ms: undefined,
        repo: undefined,
      },
      null,
    );
    assert.ok("ok" in created);
    const store = created.ok;
    mkdirSync(path.join(store.dir, "memory", "claims"), { recursive: true });
    for (let i = 0; i < files; i++) {
      const dir = path.join(store.dir, "artifacts", `part-${i % 10}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `f-${i}.txt`), `artifact ${i}\n`);
      if (i % 20 === 0) {
        writeFileSync(
          path.join(store.dir, "memory", "claims", `c-${i}.json`),
          JSON.stringify({ claim: `f-${i}`, evidence: [`artifacts/part-${i % 10}/f-${i}.txt`] }),
        );
      }
    }
    await initCheckpoints(store.dir);
    const kept = {
      feed: await ChangeFeed.start(store.dir, CHECKPOINT_DIRS),
      snapshotter: await Snapshotter.open(await loadGit(), gitdirOf(store.dir)),
    };
    try {
      for (let i = 0; i < files; i += 20)
        await recordRound(store, { claim_path: `memory/claims/c-${i}.json`, overall: "pass", verdicts: [] });
      // The first handoff looks at everything; the second takes in what the first wrote.
      await recordHandoff(store, "handoff", "first", kept);
      await recordHandoff(store, "handoff", "settle", kept);
      const a = workSoFar();
      await recordHandoff(store, "handoff", "nothing changed", kept);
      const b = workSoFar();
      writeFileSync(path.join(store.dir, "artifacts", "part-3", "new.txt"), "new\n");
      await recordHandoff(store, "handoff", "one new artifact", kept);
      return { unchanged: workBetween(a, b), oneNew: workBetween(b, workSoFar()) };
    } finally {
      kept.feed.close();
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

describe("a handoff's work does not grow with the store", () => {
  // Only Bun's recursive watcher is trusted to report changes; elsewhere every handoff looks at everything.
  const skip = skipBecause(
    "the handoff work count",
    !process.versions.bun && "it needs Bun's recursive file watcher (the runtime relay's binary runs)",
  );
  test("an unchanged handoff, and one with a new artifact, cost the same with 40 files and with 2,000", {
    skip,
  }, async () => {
    const small = await handoffWork(40);
    const large = await handoffWork(2000);
    assert.deepEqual(large.unchanged, small.unchanged, "an unchanged handoff");
    assert.deepEqual(large.oneNew.statted, small.oneNew.statted, "stats for one new artifact");
    assert.deepEqual(large.oneNew.read, small.oneNew.read, "reads for one new artifact");
    assert.deepEqual(large.oneNew.listed, small.oneNew.listed, "listings for one new artifact");
    // Nothing but the checkpoint's own record is written when nothing changed.
    assert.ok(small.unchanged.read === 0 && small.unchanged.statted <= 8, JSON.stringify(small.unchanged));
  });
});
