/**
 * libc.ts CArena: a call's C strings and arrays written into one reused buffer, read back
 * through bun:ffi as the C side would read them.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CArena } from "../../src/sandbox/linux/libc.ts";
import { skipBecause } from "../support/skip.ts";

const skip = skipBecause("CArena", process.versions.bun ? false : "it needs bun:ffi, which only Bun has");

describe("CArena", { skip }, () => {
  test("strings, string arrays and numbers read back as C would see them; a new call reuses the buffer", async () => {
    const ffi = (await import("bun:ffi")) as unknown as {
      ptr(v: ArrayBufferView): number;
      CString: new (p: number) => { toString(): string };
      read: { ptr(p: number, at: number): number; i64(p: number, at: number): bigint };
    };
    const arena = new CArena(ffi);
    const words = ["relay", "héllo wörld ✓", ""];
    arena.begin(40, 8);
    const one = arena.str("/usr/bin/true");
    const list = arena.strArray(words);
    const nums = arena.u64Array([7, 2 ** 40 + 3, -1]);
    assert.equal(new ffi.CString(one).toString(), "/usr/bin/true");
    words.forEach((w, i) => assert.equal(new ffi.CString(ffi.read.ptr(list, 8 * i)).toString(), w));
    assert.equal(ffi.read.ptr(list, 8 * words.length), 0, "NULL-terminated");
    assert.deepEqual(
      [0, 8, 16].map((at) => ffi.read.i64(nums, at)),
      [7n, 2n ** 40n + 3n, -1n],
    );
    arena.begin(10, 1);
    assert.equal(arena.str("again"), one, "the next call starts over at the same place");
  });

  test("room for more than the buffer holds: a bigger buffer, every string whole", async () => {
    const ffi = (await import("bun:ffi")) as unknown as {
      ptr(v: ArrayBufferView): number;
      CString: new (p: number) => { toString(): string };
      read: { ptr(p: number, at: number): number };
    };
    const arena = new CArena(ffi);
    const env = Array.from({ length: 50 }, (_, i) => `VAR_${i}=${"x".repeat(4000)}`);
    arena.begin(
      env.reduce((n, s) => n + s.length + 1, 0),
      env.length + 1,
    );
    const list = arena.strArray(env);
    env.forEach((e, i) => assert.equal(new ffi.CString(ffi.read.ptr(list, 8 * i)).toString(), e));
  });
});
