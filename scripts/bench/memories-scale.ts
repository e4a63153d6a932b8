/**
 * `memories.ts --scale`: phase 1 alone over 2000 and 20000 synthetic rollouts. Each size runs in
 * a fresh child process (memories-scale-child.ts; the rollouts are written by the parent first),
 * so its peak memory is its own: RSS and heap sampled every 5 ms, and the kernel's high-water mark
 * (VmHWM), which also catches peaks between samples. Prints `name value goal OK|MISS` lines.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type RolloutSpec, writeRollout } from "../../test/memories/support.ts";
import type { ChildReport } from "./memories-scale-child.ts";
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

const MB = 1024 * 1024;
/** Goals for 2000 rollouts; 20000 may take ten times as long, within the same memory. */
const GOAL = { seconds2k: 2, peakMb: 100, ratio: 12 };

/** Writes `n` rollouts to a fresh home and runs phase 1 over them in a child process. */
function measure(n: number): ChildReport {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-scale-"));
  try {
    const now = Date.now();
    for (let i = 0; i < n; i++) writeRollout(home, benchRollout(i, now));
    const script = fileURLToPath(new URL("./memories-scale-child.ts", import.meta.url));
    const r = spawnSync(process.execPath, [script, home, String(n), String(now)], {
      encoding: "utf8",
      maxBuffer: 16 * MB,
    });
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
  process.stdout.write(
    `# phase 1 alone, heuristic extractor, SQLite, concurrency 8; ${runtime}; ${os.cpus().length} cores\n`,
  );
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
    process.stdout.write(
      `${line(`memories.phase1.ratio_${label(sizes[sizes.length - 1]!)}_${label(sizes[0]!)}`, ratio, GOAL.ratio, 1)}\n`,
    );
  }
}
