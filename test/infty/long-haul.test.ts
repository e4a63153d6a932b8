/**
 * What a days-long `relay infty` run needs: a token budget that stops cleanly and resumes, per
 * role progress saved with every heartbeat (what `relay infty status` shows from another
 * terminal), and each role's compaction summary kept in the run store.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { activityLines } from "../../src/infty/activity.ts";
import { type InftyEvent, runInfty } from "../../src/infty/orchestrator.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { later, reply } from "../support/fake-model-server.ts";
import { setup } from "../support/infty-timeline.ts";

const DELIVER =
  "mkdir -p deliverable artifacts && echo 42 > artifacts/answer.txt && cp artifacts/answer.txt deliverable/ && { echo '# A'; echo '## Manifest'; echo '- answer.txt (3 bytes)'; echo '## How to verify'; echo 'cat answer.txt'; echo '## Limitations'; echo 'none'; } > deliverable/README.md";
const CLAIM = 'mkdir -p memory/claims && echo \'{"claim": "42"}\' > memory/claims/a.json';
/** Every reply states its usage: the fake server would otherwise make one up from its length. */
const SMALL = { input: 10, output: 10 };
const json = (o: unknown) => reply().text(JSON.stringify(o)).usage(SMALL);

describe("infty runs built for days", () => {
  test("a token budget stops the run cleanly; resume with a larger one finishes it", async () => {
    await using t = await setup();
    const usage = { input: 400, output: 100 };
    t.server.enqueue(
      reply().toolCall("exec_command", { cmd: CLAIM }).usage(usage),
      json({ type: "verification_request", claim_path: "memory/claims/a.json" }).usage(usage),
      json({ verdict: "pass", reasons: ["ok"] }).usage(usage),
    );
    const base = {
      home: t.home,
      config: t.config,
      runId: "tok",
      verifiers: 1,
      report: (e: InftyEvent) => t.events.push(e),
      signal: new AbortController().signal,
    };
    const first = await runInfty({ ...base, objective: "o", maxTokens: 1200 });
    assert.ok("ok" in first);
    assert.equal(first.ok.status, "budget_exhausted");
    assert.match(
      first.ok.detail,
      /the token budget \(1200 tokens\) is used up \(1500 used\); raise it with: relay infty resume tok --max-tokens N/,
    );
    const stopped = await RunStore.load(t.home, "tok");
    assert.ok("ok" in stopped);
    assert.equal(stopped.ok.state.tokens_used, 1500);
    t.server.enqueue(
      reply().toolCall("exec_command", { cmd: DELIVER }).usage(usage),
      json({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      json({ verdict: "pass", reasons: ["ok"] }),
    );
    const second = await runInfty({ ...base, resume: true, maxTokens: 10_000 });
    assert.ok("ok" in second);
    assert.equal(second.ok.status, "complete", second.ok.detail);
    const done = await RunStore.load(t.home, "tok");
    assert.ok("ok" in done);
    assert.equal(done.ok.state.tokens_used, 1500 + 500 + 20 + 20, "the count goes on from the first attempt's");
    assert.equal(done.ok.state.max_tokens, 10_000);
  });

  test("each heartbeat saves what every role is doing; status reads it from the store while the run goes on", async () => {
    await using t = await setup();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    t.server.enqueue(
      reply().toolCall("exec_command", { cmd: CLAIM }).usage({ input: 70, output: 30 }),
      later(held.then(() => json({ type: "verification_request", claim_path: "memory/claims/a.json" }))),
      json({ verdict: "pass", reasons: ["ok"] }),
      reply().toolCall("exec_command", { cmd: DELIVER }).usage(SMALL),
      json({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      json({ verdict: "pass", reasons: ["ok"] }),
    );
    let seen: string[] | undefined;
    const report = (e: InftyEvent) => {
      t.events.push(e);
      const solver = e.type === "heartbeat" ? e.roles.find((r) => r.role === "solver") : undefined;
      if (seen || !solver || solver.turn !== 1 || solver.tokens !== 100 || solver.doing !== "waiting for model") return;
      // Read back the way `relay infty status` does, from another process's point of view.
      void RunStore.load(t.home, "act").then((s) => {
        if ("error" in s || seen) return;
        const line = activityLines(s.ok.state.activity).find((l) => l.startsWith("solver"));
        if (!line || !/turn 1: waiting for model.*100 tokens/.test(line)) return;
        seen = activityLines(s.ok.state.activity);
        release();
      });
    };
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "act",
      verifiers: 1,
      heartbeatMs: 20,
      report,
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r && r.ok.status === "complete", JSON.stringify(r));
    assert.ok(seen, "a heartbeat saved the Solver's state");
    assert.match(
      seen.find((l) => l.startsWith("solver"))!,
      /^solver {6}turn 1: waiting for model \(\d+ s\), 100 tokens$/,
    );
    assert.match(seen.find((l) => l.startsWith("director"))!, /^director {4}turn 0: idle/);
  });

  test("a role's compaction summary is kept in memory/handoffs/", async () => {
    await using t = await setup();
    t.config = { ...t.config, model_context_window: 1000, auto_compact_fraction: 0.5 };
    t.server.enqueue(
      reply().toolCall("exec_command", { cmd: CLAIM }).usage({ input: 900, output: 10 }),
      reply().text("SUMMARY: the claim is in memory/claims/a.json; ask for its verification next.").usage(SMALL),
      json({ type: "verification_request", claim_path: "memory/claims/a.json" }),
      json({ verdict: "pass", reasons: ["ok"] }),
      reply().toolCall("exec_command", { cmd: DELIVER }).usage(SMALL),
      json({ type: "final_delivery", deliverable_path: "deliverable", summary: "42" }),
      json({ verdict: "pass", reasons: ["ok"] }),
    );
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "cmp",
      verifiers: 1,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    assert.ok("ok" in r && r.ok.status === "complete", JSON.stringify(r));
    const dir = path.join(r.ok.dir, "memory", "handoffs");
    assert.ok(existsSync(dir));
    const files = readdirSync(dir);
    assert.equal(files.length, 1);
    assert.match(files[0]!, /-solver\.md$/);
    assert.match(
      readFileSync(path.join(dir, files[0]!), "utf8"),
      /^# Handoff summary of the solver\n\nSUMMARY: the claim is in memory\/claims\/a\.json/,
    );
  });
});
