/**
 * A run long enough for its driver to pack its checkpoints (past PACK_LOOSE loose objects, in a
 * child process): the pack is there, the loose objects are gone, git finds the repository
 * valid, and every checkpoint still restores, each to its own turn.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, test } from "node:test";
import { PACK_LOOSE } from "../../src/infty/checkpoint-pack.ts";
import { gitdirOf, listCheckpoints } from "../../src/infty/checkpoints.ts";
import { looseObjects, packs } from "../../src/infty/git-pack.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { restoreRun } from "../../src/infty/restore.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { createScriptedClient } from "../../src/model/scripted.ts";
import { setup } from "../support/infty-timeline.ts";

describe("a long run's checkpoints, packed by its driver", () => {
  test("packed in a child process as the run goes; every checkpoint still restores", async () => {
    await using t = await setup();
    const turns = 120;
    const solver = createScriptedClient({
      script: { turns: Array.from({ length: turns * 2 }, (_, i) => ({ text: `still working (${i})` })) },
    });
    const r = await runInfty({
      home: t.home,
      config: { ...t.config, model: "scripted" },
      objective: "o",
      runId: "long",
      verifiers: 0,
      maxTurns: turns,
      maxNudges: Number.MAX_SAFE_INTEGER,
      modelFor: (role) => (role === "solver" ? solver : undefined),
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r && r.ok.status === "budget_exhausted", JSON.stringify(r));
    assert.deepEqual(
      t.events.filter((e) => e.type === "warning"),
      [],
      "no packing failed",
    );
    const dir = path.join(t.home, "infty", "long");
    const gitdir = gitdirOf(dir);
    assert.ok((await packs(gitdir)).length >= 1, "the driver packed");
    assert.ok((await looseObjects(gitdir)).length < PACK_LOOSE);
    execFileSync("git", ["--git-dir", gitdir, "fsck", "--full", "--strict"], { stdio: "pipe" });
    const all = await listCheckpoints(dir);
    assert.ok("ok" in all && all.ok.length >= turns, `${"ok" in all ? all.ok.length : all.error.message} checkpoints`);
    // Newest first: a restore cannot go forward past what an earlier restore cut off.
    for (const c of [all.ok.at(-2)!, all.ok[Math.floor(all.ok.length / 2)]!, all.ok[0]!]) {
      const store = await RunStore.load(t.home, "long");
      assert.ok("ok" in store);
      const restored = await restoreRun(store.ok, c.id);
      assert.ok("ok" in restored, JSON.stringify(restored));
      const after = await RunStore.load(t.home, "long");
      assert.ok("ok" in after && after.ok.state.turns === c.turn && after.ok.state.last_checkpoint === c.id);
    }
  });
});
