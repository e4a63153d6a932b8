/**
 * Executor overhead against a direct spawn measured in the same run, plus 100 MB streamed
 * through a PTY with the executor's peak RSS.
 *   bun scripts/bench/exec.ts [--runs 40] [--mb 100]
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { ExecutorMethods } from "../../src/executor/protocol.ts";
import { spawnSelf } from "../../src/protocol/child.ts";
import { fmtMs, numberFlag, printTable, ROOT, summarize, useSourceRelay } from "./stats.ts";

const RUNS = numberFlag("--runs", 40);
const MB = numberFlag("--mb", 100);
useSourceRelay();
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

function direct(argv: string[]): Promise<number> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env });
    c.stdout.resume();
    c.stderr.resume();
    c.once("error", reject);
    c.once("close", () => resolve(performance.now() - t));
  });
}

const child = spawnSelf("executor");
if ("error" in child) throw new Error(child.error.message);
const ex = child.ok;

async function viaExecutor(argv: string[], tty = false): Promise<number> {
  const t = performance.now();
  const r = await ex.peer.call(ExecutorMethods.exec, { command: argv, cwd: ROOT, env, tty, yield_time_ms: 30_000 });
  if ("error" in r) throw new Error(r.error.message);
  return performance.now() - t;
}

async function compare(label: string, argv: string[]): Promise<string[]> {
  for (let i = 0; i < 5; i++) {
    await direct(argv);
    await viaExecutor(argv);
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    a.push(await direct(argv));
    b.push(await viaExecutor(argv));
  }
  const sa = summarize(a);
  const sb = summarize(b);
  return [label, fmtMs(sa.p50), fmtMs(sb.p50), `${(sb.p50 / sa.p50).toFixed(2)}x`, fmtMs(sb.p50 - sa.p50)];
}

const rows = [["command", "direct spawn p50", "via executor p50", "ratio", "overhead"]];
rows.push(await compare("true", ["true"]));
rows.push(await compare("echo hello", ["echo", "hello"]));

const bytes = MB * 1_000_000;
const stream = ["sh", "-c", `head -c ${bytes} /dev/zero | tr '\\0' 'a'`];
const directStream = await direct(stream);
const ptyStream = await viaExecutor(stream, true);
const pipeStream = await viaExecutor(stream, false);
const status = readFileSync(`/proc/${ex.pid}/status`, "utf8");
const peak = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]) * 1024;
await ex.shutdown();

process.stdout.write(`exec: ${RUNS} runs each, runtime ${process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.version}`}\n\n`);
printTable(rows);
process.stdout.write("\n");
const rate = (ms: number) => `${(MB / (ms / 1000)).toFixed(0)} MB/s`;
printTable([
  [`${MB} MB of output`, "time", "throughput", "ratio vs direct"],
  ["direct spawn, pipes (baseline)", fmtMs(directStream), rate(directStream), "1.00x"],
  ["executor, pipes", fmtMs(pipeStream), rate(pipeStream), `${(pipeStream / directStream).toFixed(2)}x`],
  ["executor, PTY", fmtMs(ptyStream), rate(ptyStream), `${(ptyStream / directStream).toFixed(2)}x`],
]);
process.stdout.write(`\nexecutor peak RSS over the whole run: ${(peak / 1048576).toFixed(1)} MiB (output buffer is capped at 1 MiB per process)\n`);
