/** Housekeeping of prepared and used QuickJS VMs, with real VMs. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadQuickJS } from "../../src/codemode/engine.ts";
import { PreparedVm } from "../../src/codemode/vm.ts";
import { MAX_USED_VMS, SPARE_VMS, VmPool } from "../../src/codemode/vm-pool.ts";

const LIMIT = 16 * 1024 * 1024;
/** One turn of the timer queue (not a duration): timers set before this one have run. */
const nextTimerTurn = () => new Promise((r) => setTimeout(r, 0));

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
    await p.whenSettled();
    assert.equal(p.counts.spares, SPARE_VMS);
    const second = p.take();
    assert.notEqual(second, first);
    assert.equal(created(), 1 + SPARE_VMS, "taken from the spares, not made");
    first.dispose();
    second.dispose();
    p.drain();
  });

  test("used VMs are freed only when quiet; a backlog over the bound is freed on the next tick", async () => {
    const { p } = await pool();
    const vms = Array.from({ length: MAX_USED_VMS + 3 }, () => p.take());
    for (const vm of vms) p.release(vm, []);
    assert.ok(
      vms.every((vm) => vm.rt.alive),
      "nothing is freed on the release path itself",
    );
    const oldest = vms.slice(0, 3);
    // The overflow is freed by a timer set during release; the one set here runs after it.
    await nextTimerTurn();
    assert.equal(oldest.filter((vm) => vm.rt.alive).length, 0, "the oldest three were freed on the next tick");
    assert.ok(p.counts.used <= MAX_USED_VMS, "the bound holds");
    await p.whenSettled();
    assert.equal(p.counts.used, 0);
    assert.equal(vms.filter((vm) => vm.rt.alive).length, 0, "every used VM was freed");
    p.drain();
  });

  test("a burst as long as the spares makes no VM on the spot", async () => {
    const { p, created } = await pool();
    p.take().dispose();
    await p.whenSettled();
    assert.equal(p.counts.spares, SPARE_VMS);
    const before = created();
    const burst = Array.from({ length: SPARE_VMS }, () => p.take());
    assert.equal(created(), before, "every command of the burst found a prepared VM");
    const extra = p.take();
    assert.equal(created(), before + 1, "one more than the spares is made on the spot");
    for (const vm of [...burst, extra]) vm.dispose();
    p.drain();
  });

  test("housekeeping works in slices, letting timers and input run in between", async () => {
    const { p } = await pool();
    const vms = Array.from({ length: MAX_USED_VMS }, () => p.take());
    for (const vm of vms) p.release(vm, []);
    // Sample from a timer while the pool is quiet: if the pool did all its work in one go, no
    // sample could see it half done.
    const seen = new Set<string>();
    const sampler = setInterval(() => seen.add(`${p.counts.spares}/${p.counts.used}`), 0);
    await p.whenSettled();
    clearInterval(sampler);
    assert.deepEqual(p.counts, { spares: SPARE_VMS, used: 0 });
    const partial = [...seen].filter((s) => s !== `0/${MAX_USED_VMS}`);
    assert.ok(partial.length >= 2, `housekeeping was observed mid-way (states seen: ${[...seen].join(", ")})`);
    p.drain();
  });

  test("spares from a replaced wasm module are discarded; drain frees everything", async () => {
    const { p, created, retire } = await pool();
    p.take().dispose();
    await p.whenSettled();
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
