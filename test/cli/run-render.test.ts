import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { humanRenderer, jsonRenderer } from "../../src/cli/run-render.ts";
import { SessionEventSchema } from "../../src/contracts/events.ts";

const ERASE = "\r\x1b[2K";

/** A stream that keeps what is written; `isTTY` as asked. */
function capture(isTTY: boolean): Writable & { text: string; isTTY: boolean } {
  const w = new Writable({
    write(chunk, _enc, cb) {
      w.text += String(chunk);
      cb();
    },
  }) as Writable & { text: string; isTTY: boolean };
  w.text = "";
  w.isTTY = isTTY;
  return w;
}

describe("relay run rendering", () => {
  test("on a terminal, a heartbeat shows 'waiting for model', erased when output arrives", () => {
    const stdout = capture(true);
    const stderr = capture(true);
    const render = humanRenderer({ stdout, stderr, color: false });
    render({ type: "waiting", seconds: 3 });
    assert.equal(stderr.text, `${ERASE}waiting for model · 3 s`);
    render({ type: "waiting", seconds: 8 });
    assert.ok(stderr.text.endsWith(`${ERASE}waiting for model · 8 s`));
    render({ type: "text_delta", delta: "Hello" });
    assert.ok(stderr.text.endsWith(ERASE), "the line is erased before the answer");
    assert.equal(stdout.text, "Hello");
    const before = stderr.text;
    render({ type: "waiting", seconds: 3 });
    assert.equal(stderr.text, before, "no line over a half-printed answer on the same terminal");
    render({ type: "assistant_message", text: "Hello" });
  });

  test("without a terminal there is no live line; a retry prints its reason and count", () => {
    const stdout = capture(false);
    const stderr = capture(false);
    const render = humanRenderer({ stdout, stderr, color: false });
    render({ type: "waiting", seconds: 3 });
    assert.equal(stderr.text, "");
    render({
      type: "retrying",
      attempt: 2,
      max_retries: 5,
      delay_ms: 500,
      reason: "model stream idle for 60 s: no data from http://h/v1/responses",
    });
    assert.equal(
      stderr.text,
      "  model stream idle for 60 s: no data from http://h/v1/responses; retrying (2/5) in 500 ms\n",
    );
  });

  test("an interrupted turn prints the exact command that continues the session", () => {
    const stdout = capture(false);
    const stderr = capture(false);
    const render = humanRenderer({ stdout, stderr, color: false });
    render({
      type: "session_started",
      session_id: "019a-abc",
      rollout_path: "/h/s.jsonl",
      resumed: false,
      provider: "openai-responses",
      model: "m",
      cwd: "/w",
    });
    render({ type: "turn_aborted", reason: "interrupted" });
    assert.match(
      stderr.text,
      /relay: interrupted; the session is saved\. Continue it with: relay run --resume 019a-abc "<what next>"\n$/,
    );
  });

  test("--json prints the heartbeat as an event of the schema", () => {
    const stdout = capture(false);
    jsonRenderer(stdout)({ type: "waiting", seconds: 12 });
    const parsed = SessionEventSchema.parse(JSON.parse(stdout.text));
    assert.deepEqual(parsed, { type: "waiting", seconds: 12 });
  });
});
