/**
 * The child process of `memories.ts --scale`: phase 1 over the rollouts of one home, with its
 * time and peak memory, as one JSON line on stdout. It imports only what phase 1 needs, so its
 * memory figures are phase 1's (the parent's rollout writer and phase 2 are not loaded).
 *   bun scripts/bench/memories-scale-child.ts <home> <rollouts> <now-ms>
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { heuristicExtractor } from "../../src/memories/extract.ts";
import { runPhase1 } from "../../src/memories/phase1.ts";
import { openStateDb, type StateDb } from "../../src/memories/store/db.ts";

export interface ChildReport {
  seconds: number;
  claimed: number;
  stored: number;
  peakRssMb: number;
  peakHeapMb: number;
  hwmMb: number;
}

const MB = 1024 * 1024;

/** The kernel's peak RSS of this process (Linux), in MB; 0 where /proc is missing. */
function highWaterMb(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The phase 1 run both memory benchmarks time: heuristic extractor, every rollout claimable, concurrency 8. */
export function benchPhase1(state: StateDb, home: string, now: number, n: number) {
  return {
    state,
    relayHome: home,
    extractor: heuristicExtractor,
    workerId: "bench",
    now: () => now,
    maxAgeDays: 90,
    minIdleHours: 6,
    maxClaims: n,
    maxRunningJobs: n,
    concurrency: 8,
  };
}

/** Phase 1 over `home`'s rollouts, RSS and heap sampled every 5 ms, and the kernel's high-water mark at the end. */
async function scaleChild(home: string, n: number, now: number): Promise<ChildReport> {
  let peakRss = 0;
  let peakHeap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  };
  const sampler = setInterval(sample, 5);
  const opened = await openStateDb(path.join(home, "state.sqlite"));
  if ("error" in opened) throw new Error(opened.error.message);
  const t0 = performance.now();
  const p1 = await runPhase1({ ...benchPhase1(opened.ok, home, now, n), scanLimit: n });
  const seconds = (performance.now() - t0) / 1000;
  sample();
  clearInterval(sampler);
  await opened.ok.close();
  if ("error" in p1) throw new Error(p1.error.message);
  const stored = p1.ok.outcomes.filter((o) => o.status === "succeeded").length;
  return {
    seconds,
    claimed: p1.ok.claimed,
    stored,
    peakRssMb: peakRss / MB,
    peakHeapMb: peakHeap / MB,
    hwmMb: highWaterMb(),
  };
}

if (import.meta.main) {
  const [home, n, now] = process.argv.slice(2);
  const report = await scaleChild(home!, Number(n), Number(now));
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
