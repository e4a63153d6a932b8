/** The output fan-out every spawn path shares: early chunks kept (as copies) for the first listener. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { outputFanout } from "../../src/process/spawn/output-fanout.ts";

test("chunks before the first listener reach it in order, as they were when they came, even if their memory is reused", () => {
  const out = outputFanout();
  const reused = new Uint8Array([1, 2]);
  out.emit(reused);
  reused.set([9, 9]);
  out.emit(new Uint8Array([3]));
  const seen: number[][] = [];
  out.onData((c) => seen.push([...c]));
  out.emit(new Uint8Array([4]));
  assert.deepEqual(seen, [[1, 2], [3], [4]]);
});

test("every listener gets what comes after it joined; early chunks go to the first only", () => {
  const out = outputFanout();
  out.emit(new Uint8Array([1]));
  const a: number[] = [];
  const b: number[] = [];
  out.onData((c) => a.push(...c));
  out.onData((c) => b.push(...c));
  out.emit(new Uint8Array([2]));
  assert.deepEqual(a, [1, 2]);
  assert.deepEqual(b, [2]);
});
