import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { asksQuestion, jsonObjectsIn } from "../../src/infty/json-in-text.ts";
import {
  DirectiveSchema,
  OUTPUT_SCHEMAS,
  readContract,
  SolverSignalSchema,
  VerdictSchema,
} from "../../src/infty/signals.ts";

const signal = (text: string) => {
  const r = readContract(SolverSignalSchema, text);
  return "ok" in r ? r.ok : r.error.message;
};

describe("reading a role's JSON from what a model writes", () => {
  test("whole text, a fence inside prose, and the last object after a commentary item", () => {
    assert.deepEqual(signal('{"type":"direction_request","prompt":"which db?"}'), {
      type: "direction_request",
      prompt: "which db?",
    });
    assert.deepEqual(
      signal(
        'I checked everything.\n\n```json\n{"type": "verification_request", "claim_path": "memory/claims/a.json"}\n```\nThanks!',
      ),
      {
        type: "verification_request",
        claim_path: "memory/claims/a.json",
        notes: null,
      },
    );
    // a commentary message item and a JSON message item of one response arrive joined by a newline
    assert.deepEqual(
      signal(
        'Tests pass; sending the claim {see below}.\n{"type":"verification_request","claim_path":"memory/claims/b.json","notes":"uses {braces} in \\"strings\\""}',
      ),
      {
        type: "verification_request",
        claim_path: "memory/claims/b.json",
        notes: 'uses {braces} in "strings"',
      },
    );
  });

  test("the same rule for every role: extra keys ignored, null is absent, enums in any case", () => {
    assert.deepEqual(
      signal(
        '{"type":"Final_Delivery","deliverable_path":"deliverable","summary":null,"prompt":null,"claim_path":null,"notes":null,"confidence":0.9}',
      ),
      {
        type: "final_delivery",
        deliverable_path: "deliverable",
        summary: null,
      },
    );
    const d = readContract(DirectiveSchema, '{"directive":"use sqlite","rationale":null,"priority":"high"}');
    assert.ok("ok" in d);
    assert.deepEqual(d.ok, { directive: "use sqlite", rationale: null });
    const v = readContract(
      VerdictSchema,
      'Verdict:\n```JSON\n{"verdict":"PASS","reasons":"all 12 tests pass","suggestions":null,"score":5}\n```',
    );
    assert.ok("ok" in v);
    assert.deepEqual(v.ok, { verdict: "pass", reasons: ["all 12 tests pass"], suggestions: [] });
  });

  test("what cannot be used says what was wrong", () => {
    assert.equal(signal("I think I'm done. What do you think?"), "your reply had no JSON object");
    assert.match(
      String(signal('{"type":"direction_request","prompt":"  "}')),
      /does not match the contract \(.*prompt must not be empty/,
    );
    assert.match(String(signal('Here: {"type":"final_delivery"}')), /does not match the contract \(.*deliverable_path/);
    assert.match(String(signal('{"type":"celebrate"}')), /does not match the contract/);
    const v = readContract(VerdictSchema, '{"verdict":"maybe","reasons":[]}');
    assert.ok("error" in v && /does not match the contract \(.*verdict/.test(v.error.message), JSON.stringify(v));
  });

  test("an object that fits wins over one that does not, wherever it is", () => {
    assert.deepEqual(
      signal('{"type":"direction_request","prompt":"A or B?"}\nFor reference the claim file is {"claim":"x"}'),
      { type: "direction_request", prompt: "A or B?" },
    );
  });

  test("scanning prose: unclosed braces, arrays and strings are not objects", () => {
    assert.deepEqual(jsonObjectsIn('a { b and then {"x": 1}'), [{ x: 1 }]);
    assert.deepEqual(jsonObjectsIn("```\n[1,2]\n```"), []);
    assert.deepEqual(jsonObjectsIn('"just a string"'), []);
    assert.deepEqual(jsonObjectsIn('{"a":1}'), [{ a: 1 }], "the same object found three ways is listed once");
  });

  test("questions in prose", () => {
    assert.ok(asksQuestion("Should I use Postgres or SQLite? I can do either."));
    assert.ok(asksQuestion("Which format do you want (CSV or JSON)?"));
    assert.ok(!asksQuestion("Done. All tests pass."));
    assert.ok(
      !asksQuestion("Ran:\n```\nls foo?bar\n```\nok."),
      "a question mark in a fenced command is not a question",
    );
  });

  test("the structured-output schemas are the strict subset: every property required, none extra", () => {
    for (const { schema } of Object.values(OUTPUT_SCHEMAS)) {
      const s = schema as { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean };
      assert.deepEqual([...s.required].sort(), Object.keys(s.properties).sort());
      assert.equal(s.additionalProperties, false);
    }
  });
});
