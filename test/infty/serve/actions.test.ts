/**
 * Actions (`relay infty serve --allow-actions`) and the CLI commands behind them: the guards (POST,
 * token even on loopback, the custom header, a matching Origin), a note that reaches the
 * Director's next direction request, a stop that signals the process driving the run, a resume
 * that starts `relay infty resume` detached; each recorded in events.jsonl.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { operatorNotesFile, readOperatorNotes } from "../../../src/infty/operator.ts";
import { runInfty } from "../../../src/infty/orchestrator.ts";
import { serveActions } from "../../../src/infty/serve/actions.ts";
import { ActionResultSchema, EventsPageSchema } from "../../../src/infty/serve/api-schemas.ts";
import { startServe } from "../../../src/infty/serve/server.ts";
import { reply } from "../../support/fake-model-server.ts";
import { setup, sig } from "../../support/infty-timeline.ts";
import { runRelayAsync } from "../../support/self.ts";
import { FINISHED, RUNNING, raw, serveRuns, sse } from "../../support/serve-runs.ts";

async function served(root: string) {
  const handler = serveActions(root);
  assert.ok("ok" in handler);
  const r = await startServe({ root, host: "127.0.0.1", port: 0, actions: handler.ok });
  assert.ok("ok" in r);
  return r.ok;
}

describe("relay infty serve --allow-actions", () => {
  test("actions are POST only, need the token even on loopback, the x-relay-action header and a same-origin Origin", async () => {
    await using runs = await serveRuns();
    const s = await served(runs.root);
    try {
      assert.ok(s.token, "actions make a token");
      const url = `/api/runs/${RUNNING}/actions/note`;
      const body = JSON.stringify({ text: "hello" });
      const auth = { authorization: `Bearer ${s.token}` };
      assert.equal((await raw(s.url, url, { method: "GET", headers: auth })).status, 405);
      assert.equal((await raw(s.url, url, { method: "POST", body })).status, 403, "no token");
      assert.equal((await raw(s.url, url, { method: "POST", body, headers: auth })).status, 403, "no custom header");
      assert.equal(
        (
          await raw(s.url, url, {
            method: "POST",
            body,
            headers: { ...auth, "x-relay-action": "1", origin: "http://evil.example" },
          })
        ).status,
        403,
        "another origin",
      );
      assert.equal((await raw(s.url, "/api/runs", { headers: {} })).status, 401, "with a token, reads need it too");
      const ok = await raw(s.url, url, {
        method: "POST",
        body,
        headers: { ...auth, "x-relay-action": "1", origin: s.url, "content-type": "application/json" },
      });
      assert.equal(ok.status, 200, ok.body);
      assert.match(ActionResultSchema.parse(JSON.parse(ok.body)).message, /note op-0001 left for the Director/);
      assert.deepEqual(
        (await readOperatorNotes(runs.runningDir)).map((n) => [n.text, n.from]),
        [["hello", "relay infty serve"]],
      );
      assert.match(
        readFileSync(path.join(runs.runningDir, "events.jsonl"), "utf8"),
        /"type":"operator","action":"note","text":"hello"/,
      );
      const empty = await raw(s.url, url, {
        method: "POST",
        body: JSON.stringify({ text: " " }),
        headers: { ...auth, "x-relay-action": "1" },
      });
      assert.equal(empty.status, 400);
      assert.equal(
        (
          await raw(s.url, `/api/runs/${RUNNING}/actions/explode`, {
            method: "POST",
            headers: { ...auth, "x-relay-action": "1" },
          })
        ).status,
        404,
      );
    } finally {
      await s.close();
    }
  });

  test("stop signals the process the log names; a run that is not live is refused; resume starts relay infty resume detached", async () => {
    await using runs = await serveRuns();
    const s = await served(runs.root);
    const driver = spawn("sleep", ["600"], { stdio: "ignore" });
    try {
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        driver.once("exit", (_code, signal) => resolve(signal)),
      );
      runs.append({ type: "run_started", resumed: true, pid: driver.pid });
      const headers = { authorization: `Bearer ${s.token}`, "x-relay-action": "1" };
      const stop = await raw(s.url, `/api/runs/${RUNNING}/actions/stop`, { method: "POST", headers });
      assert.equal(stop.status, 200, stop.body);
      assert.equal(await exited, "SIGTERM");
      assert.match(
        readFileSync(path.join(runs.runningDir, "events.jsonl"), "utf8"),
        /"action":"stop","text":"SIGTERM to pid \d+ \(relay infty serve\)"/,
      );
      const again = await raw(s.url, `/api/runs/${FINISHED}/actions/stop`, { method: "POST", headers });
      assert.equal(again.status, 409);
      assert.match(again.body, /is not running \(status complete\)/);
      // A complete run's resume checks its deliverable again and ends: its run_finished shows up in the log.
      const total = EventsPageSchema.parse(
        JSON.parse((await raw(s.url, `/api/runs/${FINISHED}/events?limit=0`, { headers })).body),
      ).total;
      const stream = await sse(s.url, `/api/runs/${FINISHED}/events?from=${total}`, headers);
      const resume = await raw(s.url, `/api/runs/${FINISHED}/actions/resume`, { method: "POST", headers });
      assert.equal(resume.status, 200, resume.body);
      assert.match(resume.body, /resuming run run-finished \(pid \d+\)/);
      const seen: string[] = [];
      for (;;) {
        const m = JSON.parse((await stream.messages.next()).data) as {
          event: { type: string; detail?: string; action?: string };
        };
        seen.push(m.event.type);
        if (m.event.type === "run_finished") {
          assert.match(m.event.detail ?? "", /already complete/);
          break;
        }
      }
      assert.ok(seen.includes("operator") && seen.includes("run_started"), seen.join(" "));
      stream.close();
    } finally {
      driver.kill("SIGKILL");
      await s.close();
    }
  });

  test("--allow-actions needs a runs root that is a RELAY_HOME's infty folder", () => {
    const r = serveActions("/tmp/somewhere");
    assert.ok("error" in r);
    assert.match(r.error.message, /RELAY_HOME's infty folder/);
  });
});

describe("relay infty note / stop (CLI)", () => {
  test("a note reaches the Director with its next direction request, once", async () => {
    await using t = await setup();
    t.server.enqueue(
      sig({ type: "direction_request", prompt: "which way?" }),
      sig({ directive: "left", rationale: "" }),
      sig({ type: "direction_request", prompt: "and now?" }),
      sig({ directive: "stop", rationale: "" }),
      reply().text("done"),
    );
    let noted = false;
    const r = await runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "r-note",
      verifiers: 0,
      maxTurns: 3,
      signal: new AbortController().signal,
      report: (e) => {
        // Written as the Solver's question is handed over: before the Director is asked.
        if (e.type === "handoff" && e.to === "director" && !noted) {
          noted = true;
          appendFileSync(
            operatorNotesFile(path.join(t.home, "infty", "r-note")),
            JSON.stringify({
              id: "op-0001",
              at: new Date().toISOString(),
              text: "prefer the left road",
              from: "test",
            }) + "\n",
          );
        }
      },
    });
    assert.ok("ok" in r, JSON.stringify(r));
    const director = t.server.requests
      .map((q) => JSON.stringify(q.body))
      .filter((b) => b.includes("direction_request") && b.includes("Role: Director"));
    assert.ok(director.length >= 2, `${director.length} director requests`);
    assert.match(director[0]!, /operator_notes[^\]]*prefer the left road/);
    assert.doesNotMatch(director.at(-1)!.split("and now?")[1] ?? "", /prefer the left road/, "sent once");
  });

  test("relay infty note writes the note and logs it; relay infty stop refuses a run that is not live", async () => {
    await using runs = await serveRuns();
    const relay = (...args: string[]) => runRelayAsync(args, { ...process.env, RELAY_HOME: runs.home });
    const note = await relay("infty", "note", RUNNING, "look at the tests first");
    assert.equal(note.status, 0, note.stderr);
    assert.match(note.stdout, /note op-0001 left/);
    assert.equal((await readOperatorNotes(runs.runningDir))[0]!.text, "look at the tests first");
    const stop = await relay("infty", "stop", FINISHED);
    assert.equal(stop.status, 1);
    assert.match(stop.stderr, /run run-finished is not running \(status complete\); nothing to stop/);
    const done = await relay("infty", "note", FINISHED, "x");
    assert.match(done.stderr, /is complete; no Director will read a note/);
  });
});
