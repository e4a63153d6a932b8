import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { findTree } from "../../src/process/kill-tree.ts";
import { isAlive } from "../support/executor.ts";
import { type FakeModelServer, reply } from "../support/fake-model-server.ts";
import { DELIVER, patch, setup, sig } from "../support/infty-timeline.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { waitFor } from "../support/wait.ts";

/** The text of the last user message in a recorded request. */
function lastUser(server: FakeModelServer, i: number): string {
  const input = (server.requests[i]!.body.input ?? []) as Array<{
    type: string;
    role?: string;
    content?: Array<{ text?: string }>;
  }>;
  const u = input.filter((x) => x.type === "message" && x.role === "user").at(-1);
  return (u?.content ?? []).map((c) => c.text ?? "").join("");
}

describe("relay infty orchestration", () => {
  test("direction relay, failed verification, fix, pass, verified deliverable", async () => {
    await using t = await setup();
    t.server.enqueue(
      reply().toolCall("apply_patch", patch("artifacts/answer.txt", "41")),
      sig({ type: "direction_request", prompt: "Is 41 the right answer?" }),
      sig({ directive: "The answer must be 42. Fix it and ask for verification.", rationale: "the objective says so" }),
      reply().toolCall(
        "apply_patch",
        patch("memory/claims/answer.json", '{"claim":"answer is in artifacts/answer.txt"}'),
      ),
      sig({ type: "verification_request", claim_path: "memory/claims/answer.json", notes: null }),
      reply().toolCall("exec_command", { cmd: "cat artifacts/answer.txt" }),
      sig({ verdict: "fail", reasons: ["answer.txt says 41, not 42"], suggestions: ["write 42"] }),
      reply().toolCall("exec_command", { cmd: "echo 42 > artifacts/answer.txt" }),
      sig({ type: "verification_request", claim_path: "memory/claims/answer.json", notes: "fixed" }),
      sig({ verdict: "pass", reasons: ["answer.txt says 42"], suggestions: [] }),
      reply().toolCall("exec_command", { cmd: DELIVER }),
      sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "the answer is 42" }),
      sig({ verdict: "pass", reasons: ["deliverable/answer.txt says 42; README's check passes"], suggestions: [] }),
    );
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "Find the answer; it must be 42.",
      runId: "r-full",
      verifiers: 1,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
      heartbeatMs: 50,
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.status, "complete", r.ok.detail);
    assert.equal(readFileSync(path.join(r.ok.deliverable!, "answer.txt"), "utf8"), "42\n");
    assert.equal(t.server.queued, 0, "every scripted reply was used");
    // the Director got the Solver's question; the Solver got the directive and the failure
    assert.match(lastUser(t.server, 2), /"type": "direction_request"[\s\S]*Is 41 the right answer\?/);
    assert.match(lastUser(t.server, 3), /"type": "directive"[\s\S]*must be 42/);
    assert.match(lastUser(t.server, 7), /"overall": "fail"[\s\S]*says 41, not 42/);
    assert.match(lastUser(t.server, 10), /"overall": "pass"[\s\S]*Finalize now/);
    const store = await RunStore.load(t.home, "r-full");
    assert.ok("ok" in store);
    assert.equal(store.ok.state.status, "complete");
    assert.ok(store.ok.state.verified_at);
    const notes = readFileSync(path.join(store.ok.dir, "memory/notes.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string });
    assert.deepEqual(
      notes.map((n) => n.kind),
      ["directive", "verdict", "verdict", "verdict", "final_delivery"],
    );
    assert.ok(t.events.some((e) => e.type === "heartbeat"));
    assert.ok(t.events.some((e) => e.type === "verification_summary" && e.overall === "fail"));
  });

  test("a malformed verdict gets one corrective retry; two malformed replies count as a fail the Solver is told about", async () => {
    await using t = await setup();
    t.server.enqueue(
      reply().toolCall("apply_patch", patch("memory/claims/c.json", "{}")),
      sig({ type: "verification_request", claim_path: "memory/claims/c.json" }),
      reply().text("Looks good to me!"),
      sig({ verdict: "fail", reasons: ["nothing to check"], suggestions: [] }),
      sig({ type: "verification_request", claim_path: "memory/claims/c.json" }),
      reply().text("PASS"),
      reply().text('{"verdict": "maybe"}'),
      reply().text("thinking"),
    );
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "r-mal",
      verifiers: 1,
      maxTurns: 3,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r);
    assert.equal(r.ok.status, "budget_exhausted");
    assert.match(
      lastUser(t.server, 3),
      /Your last reply could not be used: your reply had no JSON object\. Reply with JSON only: ONE object matching \{"verdict"/,
    );
    assert.match(lastUser(t.server, 4), /"overall": "fail"/, "the corrected verdict reached the Solver");
    assert.match(
      lastUser(t.server, 7),
      /"overall": "fail"[\s\S]*the verifier-1 gave no usable verdict: the verifier-1 replied twice without following its JSON contract \(your JSON object does not match the contract \(verdict: .*\)\); its last reply: /,
    );
    assert.ok(
      t.events.some((e) => e.type === "warning" && /gave no usable verdict.*counted as a fail/.test(e.message)),
    );
    assert.equal(t.server.queued, 0);
  });

  test("three verifiers with a split vote: majority passes, all-must-pass fails", async () => {
    for (const consensus of ["majority", "all"] as const) {
      await using t = await setup();
      t.server.enqueue(
        reply().toolCall("apply_patch", patch("memory/claims/c.json", "{}")),
        sig({ type: "verification_request", claim_path: "memory/claims/c.json" }),
        sig({ verdict: "pass", reasons: ["a"], suggestions: [] }),
        sig({ verdict: "fail", reasons: ["b"], suggestions: [] }),
        sig({ verdict: "pass", reasons: ["c"], suggestions: [] }),
        reply().text("thinking"),
      );
      const r = await runInfty({
        home: t.home,
        config: t.config,
        objective: "o",
        runId: `r-${consensus}`,
        verifiers: 3,
        consensus,
        maxTurns: 2,
        report: (e) => t.events.push(e),
        signal: new AbortController().signal,
      });
      assert.ok("ok" in r);
      const summary = t.events.find((e) => e.type === "verification_summary");
      assert.deepEqual(summary, {
        type: "verification_summary",
        overall: consensus === "majority" ? "pass" : "fail",
        passes: 2,
        total: 3,
      });
      assert.equal(r.ok.status, "budget_exhausted");
      assert.match(r.ok.detail, /relay infty resume r-\w+ --max-turns N/);
      assert.equal(/Finalize now/.test(lastUser(t.server, 5)), consensus === "majority");
    }
  });

  test("a question in prose reaches the Director at once; an early delivery is sent back; chatter is told what is missing", async () => {
    await using t = await setup();
    t.server.enqueue(
      reply().text("Should I use tabs or spaces?"),
      sig({ directive: "Spaces.", rationale: null }),
      sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "done" }),
      reply().text("ok"),
    );
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "r-early",
      verifiers: 1,
      maxTurns: 3,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r);
    assert.match(
      lastUser(t.server, 1),
      /asked this in prose[\s\S]*Should I use tabs or spaces\?/,
      "the Director got the question with no nudge first",
    );
    assert.match(lastUser(t.server, 2), /"type": "directive"[\s\S]*Spaces\./);
    assert.match(lastUser(t.server, 3), /delivery_rejected[\s\S]*no claim has passed verification yet/);
    assert.equal(t.server.queued, 0);
    assert.equal(r.ok.status, "budget_exhausted");
  });
});

describe("relay infty CLI", () => {
  test("SIGKILL mid-run, then resume: nothing written before the kill is lost and the run completes", async () => {
    await using t = await setup();
    const env = { ...process.env, RELAY_HOME: t.home };
    const [cmd, ...pre] = relayArgv();
    t.server.enqueue(
      reply().toolCall("apply_patch", patch("artifacts/answer.txt", "42")),
      reply().toolCall("exec_command", { cmd: "sleep 30; echo slow", yield_time_ms: 30000 }, { callId: "call_slow" }),
    );
    const child = spawn(
      cmd!,
      [
        ...pre,
        "infty",
        "run",
        "--no-repo",
        "--run-id",
        "r-kill",
        "--base-url",
        t.server.baseUrl,
        "-m",
        "m",
        "-s",
        "danger-full-access",
        "the objective",
      ],
      { cwd: REPO_ROOT, env, stdio: "ignore" },
    );
    const sleeper = () =>
      child.pid
        ? findTree(child.pid).find((p) => {
            try {
              return readFileSync(`/proc/${p}/cmdline`, "utf8").startsWith("sleep\u000030");
            } catch {
              return false;
            }
          })
        : undefined;
    await waitFor(() => sleeper() !== undefined, "the slow command to start");
    const pid = sleeper()!;
    const runDir = path.join(t.home, "infty", "r-kill");
    // One driver per run: a second resume of the live run is refused and changes nothing.
    const leaseBefore = readFileSync(path.join(runDir, "lease.json"), "utf8");
    const second = await runRelayAsync(
      ["infty", "resume", "r-kill", "--base-url", t.server.baseUrl, "-m", "m", "-s", "danger-full-access"],
      env,
    );
    assert.equal(second.status, 1, second.stderr);
    assert.match(
      second.stderr,
      new RegExp(
        `run r-kill is driven by pid ${child.pid} \\(since .*only one process may drive or change a run at a time.*relay infty stop r-kill.*then: relay infty resume r-kill`,
      ),
    );
    assert.equal(
      readFileSync(path.join(runDir, "lease.json"), "utf8"),
      leaseBefore,
      "the refused resume left the lease alone",
    );
    assert.equal(t.server.requests.length, 2, "the refused resume asked no model");
    const liveStatus = await runRelayAsync(["infty", "status", "r-kill"], env);
    assert.match(liveStatus.stdout, new RegExp(`status: +running \\(driven by pid ${child.pid}\\)`));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    await waitFor(() => !isAlive(pid), "the run's commands to die with it");
    // A dead driver: status and list say so, with the command that resumes the run.
    const stale = await runRelayAsync(["infty", "status", "r-kill"], env);
    assert.match(
      stale.stdout,
      new RegExp(`status: +stale: driver pid ${child.pid} gone; resume with: relay infty resume r-kill\n`),
    );
    const listed = await runRelayAsync(["infty", "list", "--json"], env);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as Array<{ stale?: string; live: boolean }>).map((r) => [r.live, r.stale]),
      [[false, `stale: driver pid ${child.pid} gone; resume with: relay infty resume r-kill`]],
    );
    const listedText = await runRelayAsync(["infty", "list"], env);
    assert.match(
      listedText.stdout,
      /^RUN +STATUS +TURNS +UPDATED +OBJECTIVE\nr-kill +stale: driver pid \d+ gone; resume with: relay infty resume r-kill {2}/,
    );
    assert.equal(
      readFileSync(path.join(runDir, "artifacts/answer.txt"), "utf8"),
      "42\n",
      "work from before the kill is there",
    );
    const before = await RunStore.load(t.home, "r-kill");
    assert.ok(
      "ok" in before && before.ok.state.status === "running" && before.ok.state.pending?.type === "solver_message",
    );

    t.server.enqueue(
      reply().toolCall("apply_patch", patch("memory/claims/c.json", "{}")),
      sig({ type: "verification_request", claim_path: "memory/claims/c.json" }),
      sig({ verdict: "pass", reasons: ["ok"], suggestions: [] }),
      reply().toolCall("exec_command", { cmd: DELIVER }),
      sig({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      sig({ verdict: "pass", reasons: ["deliverable checked"], suggestions: [] }),
    );
    const resumed = spawn(
      cmd!,
      [...pre, "infty", "resume", "r-kill", "--base-url", t.server.baseUrl, "-m", "m", "-s", "danger-full-access"],
      { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let errText = "";
    resumed.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    resumed.stderr.setEncoding("utf8").on("data", (d: string) => (errText += d));
    const code = await new Promise((r) => resumed.once("exit", r));
    assert.equal(code, 0, errText);
    assert.equal(out.trim(), path.join(runDir, "deliverable"));
    assert.match(errText, /\] resumed run r-kill in /);
    assert.match(errText, new RegExp(`took the run over from pid ${child.pid} \\(driver pid ${child.pid} gone\\)`));
    assert.match(errText, /were cut off by the previous run's end/);
    const firstResumed = JSON.stringify(t.server.requests[2]!.body.input);
    assert.match(firstResumed, /aborted: the previous run ended before this tool call finished/);
    assert.match(firstResumed, /the objective/, "the Solver's history survived");
    const after = await RunStore.load(t.home, "r-kill");
    assert.ok("ok" in after && after.ok.state.status === "complete");
    assert.ok(existsSync(path.join(runDir, "deliverable/README.md")));
    const log = readFileSync(path.join(runDir, "events.jsonl"), "utf8");
    assert.equal(log.match(/"type":"run_started"/g)?.length, 2);
  });
});
