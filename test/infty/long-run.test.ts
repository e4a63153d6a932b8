import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { defaultConfig } from "../../src/config/config.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { createScriptedClient } from "../../src/model/scripted.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { longSuite } from "../support/long.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { until } from "../support/wait.ts";

describe("infty long-run hygiene", () => {
  // 400 turns, each a handoff with its own checkpoint; a window small enough for 10+ compactions.
  test("400 Solver turns stay within a small context window through compaction", {
    skip: longSuite("infty's 400-turn run", "half a minute on 2 cores"),
  }, async () => {
    useTestRelay();
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-long-"));
    try {
      const solver = createScriptedClient({
        script: { turns: Array.from({ length: 1200 }, () => ({ text: "still working on it" })) },
      });
      const config = {
        ...defaultConfig(),
        model: "scripted",
        model_context_window: 4000,
        auto_compact_fraction: 0.5,
        sandbox_mode: "danger-full-access" as const,
      };
      const r = await runInfty({
        home,
        config,
        objective: "keep going",
        runId: "long",
        verifiers: 0,
        maxTurns: 400,
        maxNudges: Number.MAX_SAFE_INTEGER,
        modelFor: (role) => (role === "solver" ? solver : undefined),
        report: () => {},
        signal: new AbortController().signal,
      });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.equal(r.ok.status, "budget_exhausted");
      const store = await RunStore.load(home, "long");
      assert.ok("ok" in store && store.ok.state.turns === 400);
      const rollout = await readRollout(store.ok.rolloutOf("solver")!);
      assert.ok("ok" in rollout);
      const compactions = rollout.ok.lines.filter((l) => l.type === "compacted").length;
      assert.ok(compactions >= 10, `compacted ${compactions} times`);
      // What a resume would load is bounded, however long the run was.
      assert.ok(rollout.ok.items.length < 200, `history after 400 turns: ${rollout.ok.items.length} items`);
      assert.ok(JSON.stringify(rollout.ok.items).length < 4000 * 4, "history fits the window");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("Ctrl-C stops the run cleanly: exit 130, status interrupted, resumable", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-int-"));
    try {
      const [cmd, ...pre] = relayArgv();
      const script = path.join(home, "s.json");
      const fs = await import("node:fs");
      fs.writeFileSync(
        script,
        JSON.stringify({
          solver: {
            turns: [
              { tool_calls: [{ name: "exec_command", arguments: { cmd: "sleep 20", yield_time_ms: 30000 } }] },
              { text: "ok" },
            ],
          },
        }),
      );
      const child = spawn(
        cmd!,
        [...pre, "infty", "run", "--no-repo", "--run-id", "int", "--script", script, "-s", "danger-full-access", "x"],
        { cwd: REPO_ROOT, env: { ...process.env, RELAY_HOME: home }, stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      // True once the run reports the command, false if relay exits first.
      const started = new Promise<boolean>((resolve) => {
        child.stderr.setEncoding("utf8").on("data", (d: string) => {
          stderr += d;
          if (stderr.includes("exec_command: sleep 20")) resolve(true);
        });
        child.once("exit", () => resolve(false));
      });
      assert.ok(await until(started, "the run to start `sleep 20`"), stderr);
      // process.kill, not child.kill: Deno's child_process then reports the exit code as null.
      process.kill(child.pid!, "SIGINT");
      const code = await new Promise((r) => child.once("exit", (c) => r(c)));
      assert.equal(code, 130, stderr);
      assert.match(stderr, /stays resumable/);
      assert.match(
        stderr,
        /\[infty int\] interrupted: stopped after the current step; resume with: relay infty resume int\n/,
      );
      assert.equal(
        stderr.match(/relay infty resume int/g)?.length,
        1,
        "the resume is named once; the summary adds none",
      );
      assert.match(stderr, /\nrun int: interrupted\n {2}wall time/);
      const meta = JSON.parse(readFileSync(path.join(home, "infty", "int", "run.json"), "utf8")) as {
        status: string;
        status_detail: string;
        pending: unknown;
      };
      assert.equal(meta.status, "interrupted");
      assert.match(meta.status_detail, /relay infty resume int/);
      assert.ok(meta.pending, "the next action is kept for the resume");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
