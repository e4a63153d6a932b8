import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { newWorkerId } from "../../src/memories/holder.ts";
import { tryClaimStage1 } from "../../src/memories/store/stage1.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";
import { HOUR, OFFLINE, ok, openDb, relay, sqliteSkip, tempHome, writeRollout } from "./support.ts";

describe("relay memories CLI", { skip: sqliteSkip }, () => {
  test("the report reads as sentences: an empty baseline, and how to take sessions that are too recent", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 1 * HOUR, user: ["fix the flaky test"] });
    const r = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /phase2 nothing new to consolidate; wrote the empty baseline; 1 session is too recent to extract yet; to take it now: relay memories consolidate --min-idle-hours 0\n$/,
    );
    const now = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--min-idle-hours", "0"]);
    assert.match(now.stdout, /claimed=1 ok=1 /);
    assert.doesNotMatch(now.stdout, /too recent/);
  });

  test("a misspelt [memories] setting is named on stderr, once, with its near miss; the command still runs", async () => {
    await using h = tempHome();
    const config = path.join(h.home, "config.toml");
    writeFileSync(config, 'modle = "x"\n[memories]\nmax_rollout_per_run = 3\n');
    const typo = `relay: warning: ${config}: unknown key "memories.max_rollout_per_run" ignored (did you mean "memories.max_rollouts_per_run"?)\n`;
    const r = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr.split(typo).length - 1, 1, r.stderr);
    assert.match(r.stderr, /unknown key "modle" ignored \(did you mean "model"\?\)/);
    assert.equal(JSON.parse(r.stdout).exit_code, 0);
    const st = await relay(h.home, ["memories", "status"]);
    assert.equal(st.code, 0, st.stderr);
    assert.equal(st.stderr, typo);
  });

  test("consolidate prints one line, --json a report; status, list, show, forget", async () => {
    await using h = tempHome();
    const a = writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["set up the CI pipeline"] });
    const r1 = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(r1.code, 0, r1.stderr);
    assert.match(
      r1.stdout,
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: phase1 scanned=1 claimed=1 ok=1 no_output=0 failed=0; phase2 consolidated 1 memory, \d+ files? changed\n$/,
    );
    assert.ok(existsSync(path.join(h.memories, "MEMORY.md")));
    const r2 = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
    assert.equal(r2.code, 0, r2.stderr);
    const rep = JSON.parse(r2.stdout);
    assert.equal(rep.phase2.status, "succeeded_no_workspace_changes");
    assert.equal(rep.exit_code, 0);
    const st = await relay(h.home, ["memories", "status", "--json"]);
    assert.equal(JSON.parse(st.stdout).outputs, 1);
    const ls = await relay(h.home, ["memories", "list"]);
    assert.match(
      ls.stdout,
      new RegExp(`^SESSION +UPDATED +USED +IN MEMORY\\.md +SUMMARY\n${a.id} .*set up the CI pipeline`),
    );
    const show = await relay(h.home, ["memories", "show", a.id]);
    assert.match(show.stdout, /## Rollout summary\n# set up the CI pipeline/);
    for (const ref of ["last", a.id.slice(0, 8)]) {
      const again = await relay(h.home, ["memories", "show", ref]);
      assert.equal(again.stdout, show.stdout, `memories show ${ref}`);
    }
    const none = await relay(h.home, ["memories", "show", "zzzz"]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no memory for session zzzz \(see relay memories list\)/);
    const fg = await relay(h.home, ["memories", "forget", a.id]);
    assert.equal(fg.code, 0);
    const r3 = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
    const rep3 = JSON.parse(r3.stdout);
    assert.equal(rep3.phase1.claimed, 0, "a forgotten session is not extracted again");
    assert.ok(rep3.phase2.changes.some((c: { status: string }) => c.status === "D"));
    assert.doesNotMatch(readFileSync(path.join(h.memories, "raw_memories.md"), "utf8"), new RegExp(a.id));
  });

  test("a lone run over the claim cap says so: the cap, not another worker; --max-rollouts above it is noted", async () => {
    await using h = tempHome();
    writeFileSync(path.join(h.home, "config.toml"), "[memories]\nmax_running_jobs = 3\n");
    const ids = Array.from(
      { length: 6 },
      (_, i) => writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR - i * 60_000 }).id,
    );
    // A live worker (this test process) holds one of them.
    const db = await openDb(h.dbFile);
    try {
      assert.equal(
        ok(
          await tryClaimStage1(db, {
            threadId: ids[2]!,
            sourceUpdatedAt: 1,
            workerId: newWorkerId(),
            leaseSeconds: 3600,
            maxRunningJobs: 3,
            now: Math.floor(Date.now() / 1000),
          }),
        ).kind,
        "claimed",
      );
    } finally {
      await db.close();
    }
    const r = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--skip-phase2", "--max-rollouts", "10"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /phase1 scanned=6 claimed=2 ok=2 no_output=0 failed=0 skipped=4 \(held by another worker 1, claim cap 3 reached \(max_running_jobs\) 3\);/,
    );
    const notice =
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: --max-rollouts 10 is above the claim cap \(max_running_jobs 3\): this run claims at most 3 rollouts; raise \[memories\] max_running_jobs in config\.toml to claim more\n/;
    assert.match(r.stderr, notice);
    assert.match(
      r.stderr,
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: left 1 rollout to pid \d+ on .*, which is still extracting it$/m,
    );

    const j = await relay(h.home, [
      "memories",
      "consolidate",
      ...OFFLINE,
      "--skip-phase2",
      "--json",
      "--max-rollouts",
      "4",
    ]);
    assert.equal(j.code, 0, j.stderr);
    const rep = JSON.parse(j.stdout);
    assert.deepEqual(
      [
        rep.phase1.claimed,
        rep.phase1.skipped.by_reason.running,
        rep.phase1.skipped.by_reason.running_cap,
        rep.phase1.skipped.max_running_jobs,
      ],
      [2, 1, 1, 3],
    );
    assert.deepEqual(rep.max_rollouts_capped, { max_rollouts: 4, max_running_jobs: 3 });
    assert.match(
      j.stderr,
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: --max-rollouts 4 is above the claim cap \(max_running_jobs 3\)/,
    );
    const within = await relay(h.home, [
      "memories",
      "consolidate",
      ...OFFLINE,
      "--skip-phase2",
      "--json",
      "--max-rollouts",
      "3",
    ]);
    assert.doesNotMatch(within.stderr, /claim cap/);
    assert.equal(JSON.parse(within.stdout).max_rollouts_capped, undefined);
  });

  test("two concurrent cron runs: each rollout extracted once, one consolidation at a time", async () => {
    await using h = tempHome();
    for (let i = 0; i < 6; i++) writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR - i * 60_000 });
    const runs = await Promise.all([0, 1].map(() => relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"])));
    const reps = runs.map((r) => {
      assert.ok(r.code === 0 || r.code === 3, `exit ${r.code}: ${r.stderr}`);
      return JSON.parse(r.stdout);
    });
    assert.equal(reps[0].phase1.claimed + reps[1].phase1.claimed, 6);
    // The phase-2 lock lets one run consolidate at a time: the other finds it held (or runs after
    // it). Which run gets there first, and with how many inputs, depends on the scheduling.
    const outcomes = reps.map((r) => r.phase2.status as string);
    const said = `phase 2 of each run: ${JSON.stringify(reps.map((r) => r.phase2))}`;
    assert.ok(
      outcomes.every((s) => s.startsWith("succeeded") || s === "skipped_running"),
      said,
    );
    assert.ok(
      outcomes.some((s) => s.startsWith("succeeded")),
      said,
    );
    for (const r of reps) if (r.phase2.status === "skipped_running") assert.equal(r.exit_code, 3);
  });

  test("with no API key the default runs offline; cooldown skips with exit 3", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["document the release steps"] });
    const env = { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" };
    const r1 = await relay(h.home, ["memories", "consolidate"], env);
    assert.equal(r1.code, 0, r1.stdout + r1.stderr);
    assert.match(r1.stdout, /phase2 consolidated .*\(offline: no API key or model server configured\)\n$/);
    writeFileSync(path.join(h.home, "config.toml"), "[memories]\nphase2_cooldown_seconds = 3600\n");
    writeRollout(h.home, { mtimeMs: Date.now() - 8 * HOUR, user: ["another task"] });
    const r2 = await relay(h.home, ["memories", "consolidate", "--json"], env);
    assert.equal(r2.code, 3, r2.stderr);
    const rep = JSON.parse(r2.stdout);
    assert.equal(rep.phase2.status, "skipped_cooldown");
    assert.equal(rep.phase1.claimed, 1, "phase 1 still runs during the phase 2 cooldown");
    assert.deepEqual([rep.extractor, rep.consolidator], ["heuristic", "heuristic"]);
    const help = await relay(h.home, ["memories", "consolidate", "--help"]);
    assert.match(help.stdout, /Exit codes: 0 ran/);
  });

  // The consolidation agent always runs in the workspace-write sandbox.
  test("a consolidate killed mid-phase-2 (SIGKILL) leaves a live lease; the rerun takes over and completes", {
    skip: skipBecause("memories SIGKILL mid-phase-2", noSandboxHere()),
  }, async () => {
    useTestRelay();
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["migrate the build to bun"] });
    const script = path.join(h.home, "agent-script.json");
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          {
            tool_calls: [
              { name: "exec_command", arguments: { cmd: "touch agent-started && sleep 60", yield_time_ms: 60000 } },
            ],
          },
          { text: "never reached" },
        ],
      }),
    );
    const [cmd, ...pre] = relayArgv();
    const child = spawn(
      cmd!,
      [...pre, "memories", "consolidate", "--extractor", "heuristic", "--consolidator", "agent", "--script", script],
      {
        env: { ...process.env, RELAY_HOME: h.home },
        stdio: "ignore",
      },
    );
    const exited = new Promise((r) => child.on("exit", r));
    const started = path.join(h.memories, "agent-started");
    for (let i = 0; i < 300 && !existsSync(started); i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(existsSync(started), "the consolidation agent did not start");
    assert.ok(existsSync(path.join(h.memories, "phase2_workspace_diff.md")));
    child.kill("SIGKILL");
    await exited;
    const st = JSON.parse((await relay(h.home, ["memories", "status", "--json"])).stdout);
    assert.equal(st.phase2.status, "running", "the killed run still holds a live lease");
    const rerun = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
    assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
    const rep = JSON.parse(rerun.stdout);
    assert.equal(rep.phase2.status, "succeeded");
    assert.ok(
      rep.phase2.changes.some((c: { path: string }) => c.path === "raw_memories.md"),
      "the killed run's inputs are still pending",
    );
    assert.match(readFileSync(path.join(h.memories, "MEMORY.md"), "utf8"), /migrate the build to bun/);
    assert.ok(!existsSync(path.join(h.memories, "phase2_workspace_diff.md")));
  });

  test("a broken DB file and bad config are usage errors (exit 2) with a clear message", async () => {
    await using h = tempHome();
    writeFileSync(h.dbFile, "this is not a database".repeat(100));
    const r = await relay(h.home, ["memories", "status"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /state DB/);
    await using h2 = tempHome();
    writeFileSync(path.join(h2.home, "config.toml"), '[memories]\nmax_unused_days = "soon"\n');
    const c = await relay(h2.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(c.code, 2);
    assert.match(c.stderr, /\[memories\]/);
  });
});
