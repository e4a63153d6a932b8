/** The progress lines of relay infty run: short tag, the Solver's words, quiet heartbeats, one failure line, the summary. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ProgressLines, QUIET_HEARTBEAT_MS, runTag } from "../../src/cli/infty/progress.ts";
import type { InftyEvent } from "../../src/infty/orchestrator.ts";
import type { RunMeta } from "../../src/infty/run-format.ts";
import { httpError } from "../support/fake-model-server.ts";
import { setup } from "../support/infty-timeline.ts";
import { runRelayAsync } from "../support/self.ts";

const ID = "run-20261205-013700-ab12";
const started: InftyEvent = { type: "run_started", run_id: ID, dir: `/h/infty/${ID}`, resumed: false, objective: "o" };
const beat = (turns: number, doing: string): InftyEvent => ({
  type: "heartbeat",
  turns,
  max_turns: 200,
  elapsed_ms: 75_000,
  last_activity: "solver working",
  tokens_used: 10,
  max_tokens: null,
  roles: [{ role: "solver", turn: turns, doing, since: new Date(0).toISOString(), tokens: 10 }],
});

describe("infty progress lines", () => {
  test("a short tag after the full id once; the Solver's prose but not its signals; a role's failed turn left to the run's own line", () => {
    assert.equal(runTag(ID), "[infty …ab12]");
    assert.equal(runTag("a-very-long-name-of-my-own-choosing"), "[infty …choosing]");
    assert.equal(runTag("averyverylongnamewithoutparts"), "[infty …tparts]");
    assert.equal(runTag("fix"), "[infty fix]");
    const p = new ProgressLines();
    assert.deepEqual(p.lines(started), [`[infty …ab12] started run ${ID} in /h/infty/${ID}`]);
    const said = (text: string, role = "solver"): string[] =>
      p.lines({ type: "role_event", role, event: { type: "assistant_message", text } as never });
    assert.deepEqual(said("Running the tests first.\nThen the fix."), [
      "[infty …ab12] solver: Running the tests first.",
    ]);
    assert.deepEqual(said('{"type": "verification_request", "claim_path": "x"}'), []);
    assert.deepEqual(
      said("x".repeat(300)).map((l) => l.length),
      ["[infty …ab12] solver: ".length + 120],
    );
    assert.deepEqual(said("a Verifier's words", "verifier-1"), []);
    assert.deepEqual(
      p.lines({
        type: "role_event",
        role: "solver",
        event: { type: "error", code: "model_http", message: "boom" } as never,
      }),
      [],
    );
    assert.deepEqual(
      p.lines({ type: "run_finished", run_id: ID, status: "failed", detail: "the Solver's turn failed: boom" }),
      ["[infty …ab12] failed: the Solver's turn failed: boom"],
    );
  });

  test("a heartbeat is printed when something changed, or after a quiet stretch", () => {
    const p = new ProgressLines();
    p.lines(started);
    const t0 = 1_000_000;
    assert.equal(p.lines(beat(1, "waiting for model"), t0).length, 2);
    assert.deepEqual(p.lines(beat(1, "waiting for model"), t0 + 15_000), [], "nothing new");
    assert.equal(p.lines(beat(1, "running exec_command: npm test"), t0 + 30_000).length, 2, "a role's state changed");
    assert.deepEqual(p.lines(beat(1, "running exec_command: npm test"), t0 + 30_000 + QUIET_HEARTBEAT_MS - 1), []);
    assert.match(
      p.lines(beat(1, "running exec_command: npm test"), t0 + 30_000 + QUIET_HEARTBEAT_MS)[0]!,
      /^\[infty …ab12\] … turn 1\/200, 1m 15s, 10 tokens, solver working$/,
    );
  });

  test("the summary: status, time, turns, tokens per role, rounds, checkpoints, branch and verified commit, deliverable", () => {
    const p = new ProgressLines();
    p.lines({ type: "verification_summary", overall: "fail", passes: 0, total: 1 });
    p.lines({ type: "verification_summary", overall: "pass", passes: 1, total: 1 });
    p.lines({ type: "checkpoint", name: "ckpt-0001", trigger: "handoff", summary: "s" });
    const commit = "a".repeat(40);
    const state = {
      run_id: ID,
      status: "complete",
      status_detail: "verified deliverable accepted",
      wall_ms_used: 3_723_000,
      max_wall_ms: 86_400_000,
      turns: 7,
      max_turns: 200,
      handoffs: 9,
      tokens_used: 1234,
      max_tokens: null,
      activity: [
        { role: "solver", turn: 7, doing: "idle", since: "", tokens: 1000 },
        { role: "verifier-1", turn: 2, doing: "idle", since: "", tokens: 234 },
      ],
      last_checkpoint: "ckpt-0009",
      deliverable: { path: "/h/d", summary: null, branch: "relay/x", commit },
      repo: { path: "/src/p", branch: "relay/x", head_commit: commit },
    } as unknown as RunMeta;
    assert.deepEqual(p.summary(state, "/h/infty/x"), [
      `run ${ID}: complete`,
      "  wall time   1h 02m of 1d",
      "  turns       7 Solver turns of 200; 9 handoffs",
      "  tokens      1234 (this process: solver 1000, verifier-1 234)",
      "  rounds      2 verification rounds here: 1 passed, 1 failed",
      "  checkpoints 1 taken here; newest ckpt-0009",
      "  branch      relay/x at aaaaaaaaaaaa in /src/p",
      `  verified    commit ${commit} (see it: relay infty diff ${ID}; merge it: relay infty apply ${ID})`,
      "  deliverable /h/d",
      "  run store   /h/infty/x",
    ]);
  });
});

describe("a role's failed turn in relay infty run", () => {
  test("is said once, naming relay infty resume <run>, never relay run --resume; the summary follows", async () => {
    await using t = await setup();
    t.server.enqueue(httpError(400, { error: { message: "bad request: model not found" } }));
    const r = await runRelayAsync(
      [
        "infty",
        "run",
        "--no-repo",
        "--run-id",
        "fails",
        "--base-url",
        t.server.baseUrl,
        "-m",
        "m",
        "-s",
        "danger-full-access",
        "x",
      ],
      { ...process.env, RELAY_HOME: t.home },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr.match(/model not found/g)?.length, 1, r.stderr);
    assert.match(
      r.stderr,
      /\[infty fails\] failed: the Solver's turn failed: .*model not found.*continue it with: relay infty resume fails\)/,
    );
    assert.doesNotMatch(r.stderr, /relay run --resume/);
    assert.match(r.stderr, /\nrun fails: failed\n {2}wall time /);
  });
});
