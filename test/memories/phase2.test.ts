import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { defaultConfig } from "../../src/config/config.ts";
import { defaultMemorySettings } from "../../src/config/memories.ts";
import { agentConsolidator, type Consolidator, heuristicConsolidator } from "../../src/memories/consolidate.ts";
import { heuristicExtractor } from "../../src/memories/extract.ts";
import { runPhase1 } from "../../src/memories/phase1.ts";
import { type Phase2Options, runPhase2 } from "../../src/memories/phase2.ts";
import { consolidateMemories } from "../../src/memories/pipeline.ts";
import { summaryStem } from "../../src/memories/storage.ts";
import type { StateDb } from "../../src/memories/store/db.ts";
import { forgetThread } from "../../src/memories/store/outputs.ts";
import { readPhase2Job } from "../../src/memories/store/phase2.ts";
import { workspaceDiff } from "../../src/memories/workspace.ts";
import { createScriptedClient } from "../../src/model/scripted.ts";
import { useTestRelay } from "../support/self.ts";
import { HOUR, ok, openDb, sqliteSkip, tempHome, writeRollout } from "./support.ts";

async function phase1(db: StateDb, home: string) {
  return ok(
    await runPhase1({
      state: db,
      relayHome: home,
      extractor: heuristicExtractor,
      workerId: "p1",
      now: Date.now,
      maxAgeDays: 10,
      minIdleHours: 6,
      maxClaims: 50,
      maxRunningJobs: 50,
      concurrency: 4,
    }),
  );
}

function p2(db: StateDb, root: string, over: Partial<Phase2Options> = {}): Phase2Options {
  return {
    state: db,
    root,
    consolidator: heuristicConsolidator,
    workerId: "p2",
    now: Date.now,
    maxRawMemories: 256,
    maxUnusedDays: 30,
    cooldownSeconds: 0,
    ...over,
  };
}

describe("phase 2", { skip: sqliteSkip }, () => {
  test("summary file stems follow the UUIDv7 time + base-62 hash + slug rule", () => {
    assert.equal(summaryStem("0194f5a6-89ab-7cde-8123-456789abcdef", 0, null), "2025-02-11T15-35-19-jqmb");
    assert.equal(
      summaryStem("0194f5a6-89ab-7cde-8123-456789abcdef", 0, " Fix Parser!"),
      "2025-02-11T15-35-19-jqmb-fix_parser_",
    );
    assert.match(summaryStem("not-a-uuid", 1_700_000_000, "x"), /^2023-11-14T22-13-20-[0-9a-zA-Z]{4}-x$/);
  });

  test("writes inputs, diffs against the baseline, consolidates, then resets the baseline", async () => {
    await using h = tempHome();
    const now = Date.now();
    const a = writeRollout(h.home, {
      mtimeMs: now - 7 * HOUR,
      cwd: "/w/a",
      branch: "branch-a",
      user: ["add a login page"],
    });
    const db = await openDb(h.dbFile);
    try {
      await phase1(db, h.home);
      const seen: string[][] = [];
      const spy: Consolidator = async (input) => {
        const diffFile = readFileSync(path.join(input.root, "phase2_workspace_diff.md"), "utf8");
        seen.push(input.diff.changes.map((c) => `${c.status} ${c.path}`));
        assert.match(diffFile, /^# Memory Workspace Diff/);
        assert.match(diffFile, /```diff\n/);
        return heuristicConsolidator(input);
      };
      const r1 = ok(await runPhase2(p2(db, h.memories, { consolidator: spy })));
      assert.equal(r1.status, "succeeded");
      assert.equal(r1.inputs, 1);
      assert.ok(seen[0]!.includes("A raw_memories.md"));
      assert.ok(seen[0]!.some((c) => /^A rollout_summaries\/.*-add_a_login_page\.md$/.test(c)));
      const summaries = readdirSync(path.join(h.memories, "rollout_summaries"));
      assert.equal(summaries.length, 1);
      assert.match(
        readFileSync(path.join(h.memories, "rollout_summaries", summaries[0]!), "utf8"),
        /git_branch: branch-a/,
      );
      assert.equal(readFileSync(path.join(h.memories, "memory_summary.md"), "utf8").split("\n")[0], "v1");
      assert.ok(!existsSync(path.join(h.memories, "phase2_workspace_diff.md")), "the diff file never stays");
      assert.deepEqual(ok(await workspaceDiff(h.memories)).changes, [], "the baseline was reset");

      // Nothing new: no agent run.
      const r2 = ok(await runPhase2(p2(db, h.memories, { consolidator: spy })));
      assert.equal(r2.status, "succeeded_no_workspace_changes");
      assert.equal(seen.length, 1);

      // A user edit plus a new rollout show up as M and A; a forgotten one as D.
      writeFileSync(
        path.join(h.memories, "MEMORY.md"),
        readFileSync(path.join(h.memories, "MEMORY.md"), "utf8") + "\n- user note\n",
      );
      const b = writeRollout(h.home, { mtimeMs: now - 8 * HOUR, cwd: "/w/b", user: ["tune the database"] });
      await phase1(db, h.home);
      ok(await forgetThread(db, a.id, Math.floor(now / 1000)));
      const r3 = ok(await runPhase2(p2(db, h.memories, { consolidator: spy })));
      assert.equal(r3.status, "succeeded");
      const c3 = seen[1]!;
      assert.ok(c3.includes("M MEMORY.md"), c3.join(","));
      assert.ok(c3.includes("M raw_memories.md"));
      assert.ok(c3.some((c) => /^D rollout_summaries\/.*add_a_login_page/.test(c)));
      assert.ok(c3.some((c) => /^A rollout_summaries\/.*tune_the_database/.test(c)));
      const raw = readFileSync(path.join(h.memories, "raw_memories.md"), "utf8");
      assert.ok(raw.includes(b.id) && !raw.includes(a.id));
      const job = ok(await readPhase2Job(db))!;
      assert.equal(job.status, "done");
      assert.ok((job.last_success_watermark ?? 0) > 0);
      // The real git CLI agrees: one baseline commit (history is not kept), a clean tree.
      const git = (...args: string[]) => spawnSync("git", ["-C", h.memories, ...args], { encoding: "utf8" });
      if (git("--version").status === 0) {
        assert.equal(git("rev-list", "--count", "HEAD").stdout.trim(), "1");
        assert.equal(git("status", "--porcelain").stdout, "");
        assert.ok(git("ls-files").stdout.split("\n").includes("raw_memories.md"));
        assert.ok(!git("ls-files").stdout.includes("phase2_workspace_diff.md"));
      }
    } finally {
      await db.close();
    }
  });

  test("nothing to consolidate: no consolidator run; hand-written user notes survive the heuristic consolidator", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      let runs = 0;
      const counting: Consolidator = async (input) => {
        runs++;
        return heuristicConsolidator(input);
      };
      const r0 = ok(await runPhase2(p2(db, h.memories, { consolidator: counting })));
      assert.equal(r0.status, "succeeded_nothing_to_consolidate");
      assert.equal(runs, 0);
      writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
      await phase1(db, h.home);
      ok(await runPhase2(p2(db, h.memories, { consolidator: counting })));
      assert.equal(runs, 1);
      const file = path.join(h.memories, "MEMORY.md");
      writeFileSync(file, readFileSync(file, "utf8") + "\n# User Notes\n- always use pnpm here\n");
      writeRollout(h.home, { mtimeMs: Date.now() - 9 * HOUR, user: ["another task"] });
      await phase1(db, h.home);
      ok(await runPhase2(p2(db, h.memories, { consolidator: counting })));
      assert.equal(runs, 2);
      assert.match(readFileSync(file, "utf8"), /another task[\s\S]*# User Notes\n- always use pnpm here/);
    } finally {
      await db.close();
    }
  });

  test("raw_memories.md is in stable thread-id order", async () => {
    await using h = tempHome();
    const now = Date.now();
    const ids = [
      "00000000-0000-7000-8000-00000000000c",
      "00000000-0000-7000-8000-00000000000a",
      "00000000-0000-7000-8000-00000000000b",
    ];
    ids.forEach((id, i) => writeRollout(h.home, { id, mtimeMs: now - 7 * HOUR - i * HOUR }));
    const db = await openDb(h.dbFile);
    try {
      await phase1(db, h.home);
      ok(await runPhase2(p2(db, h.memories)));
      const raw = readFileSync(path.join(h.memories, "raw_memories.md"), "utf8");
      const order = [...raw.matchAll(/## Thread `([^`]+)`/g)].map((m) => m[1]);
      assert.deepEqual(order, [...ids].sort());
    } finally {
      await db.close();
    }
  });

  test("a crash mid-phase-2 leaves the baseline alone; the rerun consolidates everything", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    const db = await openDb(h.dbFile);
    try {
      await phase1(db, h.home);
      // A "crashed" run: claimed by a worker that no longer exists (a pid that is not running),
      // its files half-written, its diff file left behind.
      const crashed = await runPhase2(
        p2(db, h.memories, {
          workerId: `relay-memories:${(await import("node:os")).hostname()}:999999:dead`,
          consolidator: async () => {
            throw new Error("simulated crash");
          },
        }),
      );
      assert.equal(ok(crashed).status, "failed");
      // Simulate a hard kill instead: reclaim as the dead worker and stop before finishing.
      const os = await import("node:os");
      const { tryClaimPhase2 } = await import("../../src/memories/store/phase2.ts");
      const killed = ok(
        await tryClaimPhase2(db, {
          workerId: `relay-memories:${os.hostname()}:999999:dead`,
          leaseSeconds: 3600,
          cooldownSeconds: 0,
          now: Math.floor(Date.now() / 1000) + 7200,
        }),
      );
      assert.equal(killed.kind, "claimed");
      writeFileSync(path.join(h.memories, "phase2_workspace_diff.md"), "stale");
      writeFileSync(path.join(h.memories, "MEMORY.md"), "half written");
      // The lease is live, but its holder is dead on this host: the rerun takes over.
      const rerun = ok(await runPhase2(p2(db, h.memories, { now: () => Date.now() + 7300_000 })));
      assert.equal(rerun.status, "succeeded");
      assert.ok(
        rerun.changes.some((c) => c.path === "raw_memories.md"),
        "inputs from the failed run are still pending",
      );
      assert.notEqual(readFileSync(path.join(h.memories, "MEMORY.md"), "utf8"), "half written");
      assert.deepEqual(ok(await workspaceDiff(h.memories)).changes, []);
    } finally {
      await db.close();
    }
  });

  test("two concurrent consolidations never both run the consolidator", async () => {
    await using h = tempHome();
    for (let i = 0; i < 5; i++) writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR - i * 60_000 });
    const db1 = await openDb(h.dbFile);
    const db2 = await openDb(h.dbFile);
    try {
      let running = 0;
      let overlaps = 0;
      let runs = 0;
      const slow: Consolidator = async (input) => {
        runs++;
        if (++running > 1) overlaps++;
        await new Promise((r) => setTimeout(r, 100));
        running--;
        return heuristicConsolidator(input);
      };
      const settings = { ...defaultMemorySettings(), phase2_cooldown_seconds: 0 };
      const run = (state: StateDb, w: string) =>
        consolidateMemories({
          state,
          relayHome: h.home,
          memoriesRoot: h.memories,
          settings,
          extractor: heuristicExtractor,
          consolidator: slow,
          workerId: w,
        });
      const [x, y] = await Promise.all([run(db1, "A"), run(db2, "B")]);
      const statuses = [ok(x).phase2!.status, ok(y).phase2!.status].sort();
      assert.deepEqual(statuses, ["skipped_running", "succeeded"]);
      assert.equal(overlaps, 0);
      assert.equal(runs, 1);
      const claimedTotal = ok(x).phase1!.claimed + ok(y).phase1!.claimed;
      assert.equal(claimedTotal, 5, "each rollout is extracted once");
    } finally {
      await db1.close();
      await db2.close();
    }
  });

  test("agent consolidator: a locked-down sub-session writes MEMORY.md and memory_summary.md in the memory folder", async () => {
    useTestRelay();
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    const db = await openDb(h.dbFile);
    try {
      await phase1(db, h.home);
      const patch =
        "*** Begin Patch\n*** Add File: MEMORY.md\n+# Task Group: proj\n+- parser fixes\n*** Add File: memory_summary.md\n+v1\n+\n+## User Profile\n+- fixes parsers\n*** End Patch";
      const model = createScriptedClient({
        script: {
          turns: [
            { tool_calls: [{ name: "apply_patch", arguments: { input: patch } }] },
            { text: "added one task group" },
          ],
        },
      });
      const events: string[] = [];
      const consolidator = agentConsolidator({
        home: h.home,
        config: { ...defaultConfig(), model: "scripted" },
        model,
        emit: (e) => events.push(e.type),
      });
      const r = ok(await runPhase2(p2(db, h.memories, { consolidator })));
      assert.equal(r.status, "succeeded", r.detail);
      assert.equal(r.detail, "added one task group");
      assert.match(readFileSync(path.join(h.memories, "memory_summary.md"), "utf8"), /^v1\n/);
      assert.deepEqual(ok(await workspaceDiff(h.memories)).changes, []);
      // The sub-session's own rollout is never a phase 1 input.
      const again = await phase1(db, h.home);
      assert.equal(again.claimed, 0);
    } finally {
      await db.close();
    }
  });

  test("agent consolidator: writes outside the memory folder (cwd, workdir, /tmp, patch) are refused", async () => {
    useTestRelay();
    await using h = tempHome();
    await using out = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    const db = await openDb(h.dbFile);
    try {
      await phase1(db, h.home);
      const good =
        "*** Begin Patch\n*** Add File: MEMORY.md\n+# Task Group: proj\n*** Add File: memory_summary.md\n+v1\n+\n+## User Profile\n*** End Patch";
      const model = createScriptedClient({
        script: {
          turns: [
            { tool_calls: [{ name: "exec_command", arguments: { cmd: `echo x > ${out.home}/from-cwd.txt` } }] },
            {
              tool_calls: [
                { name: "exec_command", arguments: { cmd: "echo x > from-workdir.txt", workdir: out.home } },
              ],
            },
            {
              tool_calls: [
                {
                  name: "apply_patch",
                  arguments: { input: `*** Begin Patch\n*** Add File: ${out.home}/from-patch.txt\n+x\n*** End Patch` },
                },
              ],
            },
            { tool_calls: [{ name: "exec_command", arguments: { cmd: "echo x > .git/planted" } }] },
            { tool_calls: [{ name: "apply_patch", arguments: { input: good } }] },
            { text: "done" },
          ],
        },
      });
      const consolidator = agentConsolidator({
        home: h.home,
        config: { ...defaultConfig(), model: "scripted" },
        model,
      });
      const r = ok(await runPhase2(p2(db, h.memories, { consolidator })));
      assert.equal(r.status, "succeeded", r.detail);
      assert.deepEqual(readdirSync(out.home), [], "nothing was written outside the memory folder");
      assert.ok(
        !existsSync(path.join(h.memories, ".git", "planted")),
        "the baseline repository is read-only to the agent",
      );
      assert.match(readFileSync(path.join(h.memories, "MEMORY.md"), "utf8"), /Task Group: proj/);
    } finally {
      await db.close();
    }
  });
});
