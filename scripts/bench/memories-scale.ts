/**
 * `memories.ts --scale`: phase 1 alone over 2000 and 20000 synthetic rollouts. Each size runs in
 * a fresh child process (the rollouts are written by the parent first), so its peak memory is
 * its own: RSS and heap sampled every 5 ms, and the kernel's high-water mark (VmHWM), which also
 * catches peaks between samples. Prints `name value goal OK|MISS` lines.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openStateDb } from "../../src/memories/db.ts";
import { heuristicExtractor } from "../../src/memories/extract.ts";
import { runPhase1 } from "../../src/memories/phase1.ts";
import type { StateDb } from "../../src/memories/db.ts";
import { writeRollout, type RolloutSpec } from "../../test/memories/support.ts";
import { goalLine } from "./stats.ts";

const OUTPUTS = Array.from({ length: 10 }, () => `Process exited with code 0\n${"ok line\n".repeat(40)}`);

/** The i-th synthetic rollout: one request, ten commands with their outputs, a final answer (about 7 KB). */
export function benchRollout(i: number, now: number): RolloutSpec {
  return {
    mtimeMs: now - 7 * 3_600_000 - i * 60_000,
    cwd: `/work/proj${i % 20}`,
    user: [`task ${i}: fix module${i % 37}/file${i}.ts and run the tests`],
    commands: Array.from({ length: 10 }, (_, k) => `bun test test/m${k}.test.ts`),
    outputs: OUTPUTS,
    final: `Fixed module${i % 37}/file${i}.ts; tests pass.`,
  };
}

interface ChildReport {
  seconds: number;
  claimed: number;
  stored: number;
  peakRssMb: number;
  peakHeapMb: number;
  hwmMb: number;
}

const MB = 1024 * 1024;
/** Goals for 2000 rollouts; 20000 may take ten times as long, within the same memory. */
const GOAL = { seconds2k: 2, peakMb: 100, ratio: 12 };

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

/** In the child: phase 1 over the rollouts of the home given on the command line; prints a JSON report. */
export async function scaleChild(): Promise<void> {
  const at = process.argv.indexOf("--scale-child");
  const home = process.argv[at + 1]!;
  const n = Number(process.argv[at + 2]);
  const now = Number(process.argv[at + 3]);
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
  const report: ChildReport = { seconds, claimed: p1.ok.claimed, stored, peakRssMb: peakRss / MB, peakHeapMb: peakHeap / MB, hwmMb: highWaterMb() };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

/** Writes `n` rollouts to a fresh home and runs phase 1 over them in a child process. */
function measure(n: number): ChildReport {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-scale-"));
  try {
    const now = Date.now();
    for (let i = 0; i < n; i++) writeRollout(home, benchRollout(i, now));
    const script = fileURLToPath(new URL("./memories.ts", import.meta.url));
    const r = spawnSync(process.execPath, [script, "--scale-child", home, String(n), String(now)], { encoding: "utf8", maxBuffer: 16 * MB });
    if (r.status !== 0) throw new Error(`phase 1 over ${n} rollouts failed (exit ${r.status}): ${r.stderr}`);
    const report = JSON.parse(r.stdout.trim().split("\n").pop()!) as ChildReport;
    if (report.stored !== n) throw new Error(`phase 1 over ${n} rollouts stored ${report.stored} memories`);
    return report;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const label = (n: number) => (n % 1000 === 0 ? `${n / 1000}k` : String(n));

const line = goalLine;

/** The parent: each size in turn, then the ratio of the largest to the smallest. */
export async function runScale(): Promise<void> {
  const at = process.argv.indexOf("--sizes");
  const sizes = (at >= 0 ? process.argv[at + 1]! : "2000,20000").split(",").map(Number);
  const runtime = process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.versions.node}`;
  process.stdout.write(`# phase 1 alone, heuristic extractor, SQLite, concurrency 8; ${runtime}; ${os.cpus().length} cores\n`);
  const reports: ChildReport[] = [];
  for (const n of sizes) {
    const r = measure(n);
    reports.push(r);
    const name = `memories.phase1.${label(n)}`;
    const peak = Math.max(r.peakRssMb, r.hwmMb);
    process.stdout.write(`${line(`${name}.seconds`, r.seconds, (GOAL.seconds2k * n) / 2000)}\n`);
    process.stdout.write(`${line(`${name}.peak_mb`, peak, GOAL.peakMb, 0)}\n`);
    process.stdout.write(`${line(`${name}.peak_heap_mb`, r.peakHeapMb, GOAL.peakMb, 0)}\n`);
  }
  if (reports.length >= 2) {
    const first = reports[0]!;
    const last = reports[reports.length - 1]!;
    const ratio = last.seconds / first.seconds;
    process.stdout.write(`${line(`memories.phase1.ratio_${label(sizes[sizes.length - 1]!)}_${label(sizes[0]!)}`, ratio, GOAL.ratio, 1)}\n`);
  }
}
