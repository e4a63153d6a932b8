/** util/random.ts: ids from Web Crypto, and digests that match node:crypto's. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { fillRandom, hashHex, randomHex, randomInt, randomUUID } from "../../src/util/random.ts";

describe("util/random", () => {
  test("randomHex: 2 lowercase hex digits a byte, and not the same twice", () => {
    const a = randomHex(8);
    assert.match(a, /^[0-9a-f]{16}$/);
    assert.match(randomHex(3), /^[0-9a-f]{6}$/);
    assert.notEqual(a, randomHex(8));
  });

  test("randomUUID is a v4 UUID; fillRandom fills the buffer", () => {
    assert.match(randomUUID(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const buf = new Uint8Array(64);
    fillRandom(buf);
    assert.ok(buf.some((b) => b !== 0));
  });

  test("randomInt stays in [min, max) and reaches both ends; a bad range throws", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const n = randomInt(3, 7);
      assert.ok(Number.isInteger(n) && n >= 3 && n < 7, String(n));
      seen.add(n);
    }
    assert.deepEqual([...seen].sort(), [3, 4, 5, 6]);
    assert.throws(() => randomInt(5, 5), RangeError);
    assert.throws(() => randomInt(0, 1.5), RangeError);
  });

  test("hashHex matches node:crypto for text and bytes", () => {
    assert.equal(hashHex("sha1", "list_files"), createHash("sha1").update("list_files").digest("hex"));
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    assert.equal(hashHex("sha256", bytes), createHash("sha256").update(bytes).digest("hex"));
  });
});
