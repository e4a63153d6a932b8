/** The live view's timeline rows: a role's signal reads as what it asks or says, not as raw JSON. */
import assert from "node:assert/strict";
import { describe as group, test } from "node:test";
import { describe, signalRow } from "../../../src/infty/serve/page/describe.ts";

const says = (role: string, text: string) =>
  describe({ type: "role", at: "t", role, event: { kind: "message", text } });

group("timeline rows for roles' signals", () => {
  test("each signal as a readable row; lenient as the orchestrator is (prose around it, a fence, any case)", () => {
    assert.deepEqual(
      says("solver", '{"type":"verification_request","claim_path":"memory/claims/a.json","notes":"run npm test"}'),
      { who: "solver", kind: "asks to verify", text: "memory/claims/a.json — run npm test", tone: "info" },
    );
    assert.deepEqual(
      says("solver", 'I need a decision.\n```json\n{"type": "direction_request", "prompt": "tabs or\\nspaces?"}\n```'),
      { who: "solver", kind: "asks Director", text: "tabs or spaces?", tone: "info" },
    );
    assert.deepEqual(says("solver", '{"type":"final_delivery","deliverable_path":"deliverable","summary":"done"}'), {
      who: "solver",
      kind: "delivers",
      text: "deliverable — done",
      tone: "info",
    });
    assert.deepEqual(says("director", '{"directive":"Use spaces.","rationale":"house style"}'), {
      who: "director",
      kind: "directive",
      text: "Use spaces. (why: house style)",
      tone: "info",
    });
    assert.deepEqual(
      says("verifier-1", '{"verdict":"PASS","reasons":["tests pass","README exact"],"suggestions":[]}'),
      { who: "verifier-1", kind: "verdict PASS", text: "tests pass; README exact", tone: "pass" },
    );
    assert.deepEqual(says("verifier-1", 'Checked. {"verdict": "fail", "reasons": "41, not 42"}'), {
      who: "verifier-1",
      kind: "verdict FAIL",
      text: "41, not 42",
      tone: "fail",
    });
    assert.deepEqual(
      says("solver", '{"type":"Verification-Request","claim_path":"memory/claims/b.json","notes":null}'),
      { who: "solver", kind: "asks to verify", text: "memory/claims/b.json", tone: "info" },
    );
    assert.deepEqual(
      says(
        "verifier-1",
        '{"type":"verification_request","final":true,"deliverable_path":"deliverable","summary":"the answer"}',
      ),
      { who: "verifier-1", kind: "asks to verify", text: "deliverable — the answer", tone: "info" },
    );
    assert.deepEqual(says("verifier-1", '{"verdict":" Pass ","reasons":"ok"}'), {
      who: "verifier-1",
      kind: "verdict PASS",
      text: "ok",
      tone: "pass",
    });
  });

  test("prose, and JSON that is no signal, stay what the role said", () => {
    assert.deepEqual(says("solver", "Running the tests  first."), {
      who: "solver",
      kind: "says",
      text: "Running the tests first.",
      tone: "",
    });
    assert.equal(signalRow('{"type":"something_else"}'), undefined);
    assert.equal(signalRow('{"verdict":"maybe"}'), undefined);
    assert.equal(signalRow("{not json"), undefined);
  });
});
