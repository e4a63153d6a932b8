import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { idFromToken, scanEnvelopeHead } from "../../src/contracts/wire-id.ts";

describe("exact request ids from the raw text", () => {
  test("the top-level type and id token are found, whatever the key order, spacing or escapes", () => {
    assert.deepEqual(scanEnvelopeHead('{"type":"request","id":18446744073709551615,"method":"m"}'), {
      type: "request",
      idToken: "18446744073709551615",
    });
    assert.deepEqual(
      scanEnvelopeHead(' {\n "params" : {"id": 1, "type": "x", "s": "}\\"{"} , "id" : 42 , "\\u0074ype":"response" }'),
      { type: "response", idToken: "42" },
    );
  });

  test("nested ids do not count, and the last top-level id wins as in JSON.parse", () => {
    assert.deepEqual(scanEnvelopeHead('{"params":[{"id":1}],"id":2,"id":3}'), { idToken: "3" });
    assert.deepEqual(scanEnvelopeHead('{"id":2,"id":"x"}'), { idToken: undefined });
  });

  test("a payload broken after the id still yields what came before the break", () => {
    assert.deepEqual(scanEnvelopeHead('{"type":"request","id":7,"params":{"a":'), { type: "request", idToken: "7" });
    assert.deepEqual(scanEnvelopeHead('{"type":"request","id'), { type: "request" });
    assert.deepEqual(scanEnvelopeHead("[1]"), {});
    assert.deepEqual(scanEnvelopeHead(""), {});
  });

  test("100k levels of nesting cost a loop, not a stack", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    assert.deepEqual(scanEnvelopeHead(`{"params":${deep},"type":"request","id":9}`), { type: "request", idToken: "9" });
  });

  test("tokens become numbers up to 2^53-1, bigints up to 2^64-1, and nothing otherwise", () => {
    assert.equal(idFromToken("0"), 0);
    assert.equal(idFromToken("9007199254740991"), 9007199254740991);
    assert.equal(idFromToken("9007199254740992"), 9007199254740992n);
    assert.equal(idFromToken("18446744073709551615"), 18446744073709551615n);
    for (const bad of ["18446744073709551616", "-1", "1.5", "1e3", "01", "", "99999999999999999999999"])
      assert.equal(idFromToken(bad), undefined, bad);
  });
});
