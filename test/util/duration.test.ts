/** util/duration.ts: what people write for --max-wall / --role-timeout, and what is refused. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatDuration, MAX_TIMER_MS, parseDuration } from "../../src/util/duration.ts";

const ms = (text: string, o?: Parameters<typeof parseDuration>[2]) => {
  const r = parseDuration(text, "--x", o);
  assert.ok("ok" in r, `${text}: ${"error" in r ? r.error.message : ""}`);
  return r.ok;
};
const refusal = (text: string, o?: Parameters<typeof parseDuration>[2]) => {
  const r = parseDuration(text, "--x", o);
  assert.ok("error" in r, `${text} was accepted`);
  assert.equal(r.error.code, "invalid_duration");
  return r.error.message;
};

describe("parseDuration", () => {
  test("units s, m, h, d, decimals, case and surrounding blanks", () => {
    assert.equal(ms("90s"), 90_000);
    assert.equal(ms("5m"), 300_000);
    assert.equal(ms("2h"), 7_200_000);
    assert.equal(ms("1d"), 86_400_000);
    assert.equal(ms("1.5h"), 5_400_000);
    assert.equal(ms(" 10M "), 600_000);
  });

  test("a plain number takes the default unit, and needs one", () => {
    assert.equal(ms("20", { defaultUnit: "m" }), 1_200_000);
    assert.equal(ms("2h", { defaultUnit: "m" }), 7_200_000, "a unit still wins over the default");
    assert.match(refusal("20"), /--x needs a unit: s, m, h or d, e.g. 20m/);
  });

  test("zero, negative, unknown unit, empty and junk are refused with what to write", () => {
    assert.match(refusal("0"), /--x must be at least 1s \(got "0"\)/);
    assert.match(refusal("0", { defaultUnit: "m" }), /--x must be at least 1s \(got "0"\)/);
    assert.match(refusal("0s"), /must be at least 1s/);
    assert.match(refusal("-5m"), /--x must be a duration like 90s, 5m, 2h, 1d \(got "-5m"\)/);
    assert.match(refusal("5x"), /must be a duration like/);
    assert.match(refusal(""), /must be a duration like .*\(got ""\)/);
    assert.match(refusal("   "), /must be a duration/);
    assert.match(refusal("m"), /must be a duration/);
    assert.match(refusal("1e3s"), /must be a duration/);
    assert.match(refusal("5 m"), /must be a duration/);
    assert.match(refusal("0.0001s"), /must be at least 1s/);
    assert.match(refusal("x", { defaultUnit: "m" }), /must be a number of minutes or a duration/);
  });

  test("overflow and values past the maximum are refused, naming the maximum", () => {
    assert.match(refusal("25d"), /--x must be at most 24d \(got "25d"\)/);
    assert.equal(ms("24d"), MAX_TIMER_MS);
    assert.ok(MAX_TIMER_MS < 2 ** 31, "a timer can wait that long");
    assert.match(refusal("9".repeat(400) + "d", { maxMs: 366 * 86_400_000 }), /must be at most 366d/);
    assert.match(refusal("2d", { maxMs: 86_400_000 }), /must be at most 1d \(got "2d"\)/);
    assert.match(refusal("30s", { minMs: 60_000 }), /must be at least 1m/);
  });

  test("formatDuration picks the largest even unit", () => {
    assert.equal(formatDuration(5_400_000), "90m");
    assert.equal(formatDuration(86_400_000), "1d");
    assert.equal(formatDuration(90_000), "90s");
    assert.equal(formatDuration(1_500), "2s");
    assert.equal(formatDuration(5), "5ms");
  });
});
