import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type SessionEvent, SessionEventSchema } from "../../src/contracts/events.ts";
import { reply } from "../support/fake-model-server.ts";
import { deferred, until } from "../support/wait.ts";
import { harness } from "./run-support.ts";

describe("waiting is visible: a silent model server", () => {
  test("heartbeats come while the server says nothing, and stop once its reply is done", async () => {
    await using h = await harness();
    // Headers and two events that yield no output, then silence; the retry after the drop answers.
    h.server.enqueue(reply().text("never sent").hangAfter(2), reply().text("awake now"));
    const twoBeats = deferred();
    let beats = 0;
    const r = h.run({
      prompt: "p",
      heartbeat: { afterMs: 20, everyMs: 20 },
      emit: (e) => {
        h.events.push(e);
        if (e.type === "waiting" && ++beats === 2) twoBeats.resolve();
      },
    });
    await until(twoBeats.promise, "two waiting heartbeats from a silent server");
    // On a loaded machine the client can fall silent before the server has marked the request
    // held; a drop before that drops nothing and the client waits out the 300 s idle timeout.
    await until(h.server.whenHolding(), "the server holding the request");
    h.server.dropHeld();
    const done = await r;
    assert.ok("ok" in done, JSON.stringify(done));
    assert.equal(done.ok.outcome.finalMessage, "awake now");

    const types = h.events.map((e) => e.type);
    const firstText = types.indexOf("text_delta");
    const early = h.events
      .slice(0, firstText)
      .filter((e): e is Extract<SessionEvent, { type: "waiting" }> => e.type === "waiting");
    assert.ok(early.length >= 2, `heartbeats before any output: ${types.join(",")}`);
    assert.deepEqual(
      early.map((e) => e.seconds),
      [...early.map((e) => e.seconds)].sort((a, b) => a - b),
      "the count only goes up",
    );
    assert.ok(types.indexOf("waiting") > types.indexOf("turn_started"), "heartbeats belong to the model request");
    assert.ok(!types.slice(types.indexOf("turn_completed")).includes("waiting"), "no heartbeat after the turn ends");
    for (const e of h.events) assert.ok(SessionEventSchema.safeParse(e).success, `a valid event: ${JSON.stringify(e)}`);
  });

  test("a stream idle past stream_idle_timeout_ms is retried with the reason, then succeeds", async () => {
    await using h = await harness();
    // Long enough that a loaded machine's own pauses inside the good reply stay under it.
    const config = h.config({ stream_idle_timeout_ms: 500 });
    h.server.enqueue(reply().text("never sent").hangAfter(2), reply().text("recovered"));
    const done = await h.run({ prompt: "p", config });
    assert.ok("ok" in done, JSON.stringify(done));
    assert.equal(done.ok.outcome.finalMessage, "recovered");
    const retries = h.events.filter((e): e is Extract<SessionEvent, { type: "retrying" }> => e.type === "retrying");
    assert.equal(retries.length, 1, JSON.stringify(retries));
    assert.match(
      retries[0]!.reason,
      /^model stream idle for 500 ms: no data from http:\/\/127\.0\.0\.1:\d+\/v1\/responses$/,
    );
    assert.equal(retries[0]!.attempt, 1);
    assert.equal(retries[0]!.max_retries, 4);
    assert.equal(h.server.requests.length, 2, "the stalled request was sent again");
  });
});
