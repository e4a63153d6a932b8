/**
 * The peer checks every frame with checkEnvelope, not EnvelopeSchema (src/protocol/envelope-guard.ts).
 * Both must accept the same JSON values and give the same envelope: edge cases by hand, then
 * thousands of generated near-envelopes from a seeded generator.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EnvelopeSchema } from "../../src/contracts/envelope.ts";
import { restoreExactId } from "../../src/contracts/wire-id.ts";
import { checkEnvelope } from "../../src/protocol/envelope-guard.ts";
import { prng } from "../support/prng.ts";

/** What the peer does to a payload before it checks it. */
function fromText(text: string): unknown {
  const value: unknown = JSON.parse(text);
  restoreExactId(value, text);
  return value;
}

function assertSameVerdict(text: string): boolean {
  const value = fromText(text);
  const schema = EnvelopeSchema.safeParse(value);
  const guard = checkEnvelope(value);
  assert.equal(
    guard !== undefined,
    schema.success,
    `verdicts differ for ${text}: guard ${guard ? "accepts" : "refuses"}`,
  );
  if (schema.success) assert.deepStrictEqual(guard, schema.data, `outputs differ for ${text}`);
  return schema.success;
}

const IDS = [
  "0",
  "1",
  "-1",
  "1.5",
  "1e3",
  "9007199254740991",
  "9007199254740992",
  "18446744073709551615",
  "18446744073709551616",
  '"1"',
  "null",
  "true",
  "[]",
  "{}",
];
const STRINGS = ['""', '"m"', '"tools/call"', "1", "null", '["m"]', "{}"];
const ANY = ["null", "1", '"x"', "[]", "{}", '{"a":[1,{"b":null}]}', "false"];
const ERRORS = [
  '{"code":"c","message":"m"}',
  '{"code":"c","message":"m","data":{"x":1}}',
  '{"code":"c","message":"m","extra":1}',
  '{"code":1,"message":"m"}',
  '{"code":"c"}',
  '{"message":"m","code":"c","data":null}',
  "[]",
  "null",
  '"e"',
];
const RESULTS = [
  '{"ok":1}',
  '{"ok":null}',
  '{"ok":{"a":1}}',
  "{}",
  '{"ok":1,"extra":2}',
  '{"ok":1,"error":{"code":"c","message":"m"}}',
  "[]",
  "null",
  '"ok"',
  ...ERRORS.map((e) => `{"error":${e}}`),
  ...ERRORS.map((e) => `{"error":${e},"x":0}`),
];
const TYPES = ['"request"', '"response"', '"notification"', '"cancel"', '"Request"', '""', "1", "null"];
const FIELDS: Array<[string, string[]]> = [
  ["type", TYPES],
  ["id", IDS],
  ["method", STRINGS],
  ["params", ANY],
  ["result", RESULTS],
  ["extra", ANY],
  ["__proto__", ANY],
];

function generated(next: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const fields = FIELDS.filter(
    ([name]) => next() < (name === "type" ? 0.95 : name === "extra" || name === "__proto__" ? 0.15 : 0.6),
  );
  // Shuffled, so that key order is no part of either verdict.
  fields.sort(() => next() - 0.5);
  return `{${fields.map(([name, values]) => `"${name}":${pick(values)}`).join(",")}}`;
}

describe("checkEnvelope agrees with EnvelopeSchema", () => {
  test("edge cases: ids at their bounds, empty methods, strict results, unknown keys dropped", () => {
    const accepted = [
      '{"type":"request","id":0,"method":"m"}',
      '{"type":"request","id":18446744073709551615,"method":"m","params":{"a":1},"extra":true}',
      '{"type":"notification","method":"n","params":null}',
      '{"type":"response","id":9007199254740992,"result":{"ok":null}}',
      '{"type":"response","id":3,"result":{"error":{"code":"c","message":"m","data":[1],"stack":"x"}}}',
      '{"type":"cancel","id":4,"method":"ignored"}',
    ];
    const refused = [
      "[]",
      "null",
      '"request"',
      '{"type":"request","id":-1,"method":"m"}',
      '{"type":"request","id":1.5,"method":"m"}',
      '{"type":"request","id":18446744073709551616,"method":"m"}',
      '{"type":"request","id":"1","method":"m"}',
      '{"type":"request","id":1,"method":""}',
      '{"type":"request","method":"m"}',
      '{"type":"notification"}',
      '{"type":"response","id":1,"result":{}}',
      '{"type":"response","id":1,"result":{"ok":1,"more":2}}',
      '{"type":"response","id":1,"result":{"error":{"code":"c"}}}',
      '{"type":"response","id":1}',
      '{"type":"cancel"}',
      '{"type":"other","id":1}',
      '{"id":1,"method":"m"}',
    ];
    for (const text of accepted) assert.equal(assertSameVerdict(text), true, text);
    for (const text of refused) assert.equal(assertSameVerdict(text), false, text);
  });

  test("5000 generated near-envelopes: the same verdict and the same output for each", () => {
    const next = prng(20261203);
    let accepted = 0;
    for (let i = 0; i < 5000; i++) if (assertSameVerdict(generated(next))) accepted++;
    // The generator must reach both sides often, or the comparison proves little.
    assert.ok(accepted > 250 && accepted < 4750, `accepted ${accepted} of 5000`);
  });
});
