/** Small helpers shared by the benchmarks: flags, percentiles and aligned ratio tables. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { joinCommandLine } from "../../src/protocol/command-line.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A numeric `--name value` flag. */
export function numberFlag(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** A `--name value` flag's value, or undefined without it. */
export function textFlag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Child processes re-exec relay from source, not the benchmark script. */
export function useSourceRelay(): void {
  process.env.RELAY_SELF_COMMAND ??= joinCommandLine([process.execPath, path.join(ROOT, "src/main.ts")]);
}
export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

export function summarize(samplesMs: number[]): { mean: number; p50: number; p95: number; n: number } {
  const s = [...samplesMs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { mean, p50: percentile(s, 50), p95: percentile(s, 95), n: s.length };
}

export function fmtMs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`;
}

export function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  for (const r of rows) process.stdout.write(r.map((cell, c) => cell.padEnd(widths[c]!)).join("  ") + "\n");
}

/** A result line with a goal (lower is better): `name value goal OK|MISS`. */
export function goalLine(name: string, value: number, goal: number, digits = 2): string {
  return `${name} ${value.toFixed(digits)} ${goal} ${value <= goal ? "OK" : "MISS"}`;
}

/** Runs `fn` n times one after another; each run's wall time in ms. */
export async function timeEach(n: number, fn: (i: number) => Promise<unknown> | unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

/** The value of a Result the bench needs, or a throw with its message. */
export async function must<T>(p: Promise<{ ok: T } | { error: { message: string } }>): Promise<T> {
  const r = await p;
  if ("error" in r) throw new Error(r.error.message);
  return r.ok;
}
