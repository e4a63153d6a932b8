/** Housekeeping of prepared and used QuickJS VMs, with real VMs. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadQuickJS } from "../../src/codemode/engine.ts";
import { MAX_USED_VMS, SPARE_VMS, VmPool } from "../../src/codemode/vm-pool.ts";
import { PreparedVm } from "../../src/codemode/vm.ts";

const LIMIT = 16 * 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pool() {
  const qjs = await loadQuickJS();
  let created = 0;
  let current = qjs;
  const p = new VmPool(
    () => {
      created++;
      return PreparedVm.create(qjs, LIMIT);
    },
    (vm) => vm.module === current,
  );
  return { p, created: () => created, retire: () => (current = undefined as never) };
}

describe("VM pool", () => {
  test("an empty pool makes a VM at once, then refills to its spares once the engine is quiet", async () => {
    const { p, created } = await pool();
    const first = p.take();
    assert.equal(created(), 1, "made on the spot");
    for (let i = 0; i < 100 && p.counts.spares < SPARE_VMS; i++) await sleep(5);
    assert.equal(p.counts.spares, SPARE_VMS);
    const second = p.take();
    assert.notEqual(second, first);
    assert.equal(created(), 1 + SPARE_VMS, "taken from the spares, not made");
    first.dispose();
    second.dispose();
    p.drain();
  });

  test("used VMs are freed only when quiet; a backlog over the bound is freed at once", async () => {
    const { p } = await pool();
    const vms = Array.from({ length: MAX_USED_VMS + 3 }, () => p.take());
    for (const vm of vms) p.release(vm, []);
    assert.equal(p.counts.used, MAX_USED_VMS, "the bound holds even while busy");
    assert.ok(vms.every((vm) => vm.rt.alive), "nothing is freed on the release path itself");
    // A few event-loop turns, well under the quiet period.
    const oldest = vms.slice(0, 3);
    for (let i = 0; i < 20 && oldest.some((vm) => vm.rt.alive); i++) await new Promise((r) => setImmediate(r));
    assert.equal(oldest.filter((vm) => vm.rt.alive).length, 0, "the oldest three were freed without waiting");
    for (let i = 0; i < 400 && p.counts.used > 0; i++) await sleep(5);
    assert.equal(p.counts.used, 0);
    assert.equal(vms.filter((vm) => vm.rt.alive).length, 0, "every used VM was freed");
    p.drain();
  });

  test("spares from a replaced wasm module are discarded; drain frees everything", async () => {
    const { p, created, retire } = await pool();
    p.take().dispose();
    for (let i = 0; i < 100 && p.counts.spares < SPARE_VMS; i++) await sleep(5);
    const before = created();
    retire();
    const vm = p.take();
    assert.equal(created(), before + 1, "stale spares were not handed out");
    p.release(vm, []);
    p.drain();
    assert.deepEqual(p.counts, { spares: 0, used: 0 });
    assert.equal(vm.rt.alive, false);
  });
});
