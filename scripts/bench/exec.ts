/**
 * Executor overhead against a direct spawn measured in the same run: `true` and `echo` with no
 * sandbox, under the default sandbox (workspace-write in a git workspace, built-in mechanism)
 * and, where it works, bubblewrap; then a session's first commands on fresh executors; then 100 MB
 * streamed through a PTY with the executor's peak RSS. By default it measures a freshly compiled
 * binary, as users run it.
 *   bun scripts/bench/exec.ts [--runs 40] [--fresh 6] [--mb 100] [--source | --relay PATH]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { probeBwrap } from "../../src/sandbox/bwrap.ts";
import { buildBinary } from "../build.ts";
import { fmtMs, numberFlag, printTable, ROOT, summarize } from "./stats.ts";

const RUNS = numberFlag("--runs", 40);
const MB = numberFlag("--mb", 100);
const flag = (name: string) => process.argv.includes(name);
const relayFlag = process.argv[process.argv.indexOf("--relay") + 1];
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

const scratch = mkdtempSync(path.join(os.tmpdir(), "relay-bench-exec-"));
const workspace = path.join(scratch, "ws");
mkdirSync(path.join(workspace, ".git"), { recursive: true });

function relayCommand(): { argv: string[]; what: string } {
  if (flag("--source"))
    return {
      argv: [process.execPath, path.join(ROOT, "src/main.ts")],
      what: "from source (the helper forks: Bun has transpiler threads)",
    };
  if (process.argv.includes("--relay") && relayFlag) return { argv: [path.resolve(relayFlag)], what: relayFlag };
  const built = buildBinary({ outfile: path.join(scratch, "relay") });
  return { argv: [built.outfile], what: "a freshly compiled binary" };
}

const relay = relayCommand();
const childEnv = { ...process.env };
delete childEnv.RELAY_SELF_COMMAND;
const c = spawnPeer([...relay.argv, "executor"], { env: childEnv, name: "executor" });
if ("error" in c) throw new Error(c.error.message);
const ex = c.ok;

function direct(argv: string[]): Promise<number> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env, cwd: workspace });
    child.stdout.resume();
    child.stderr.resume();
    child.once("error", reject);
    child.once("close", () => resolve(performance.now() - t));
  });
}

const UNSANDBOXED: SandboxPolicy = { mode: "danger-full-access", writable_roots: [], network: true };
const sandboxed = (mechanism: SandboxPolicy["mechanism"]): SandboxPolicy => ({
  mode: "workspace-write",
  writable_roots: [workspace],
  network: false,
  mechanism,
});

async function viaExecutor(argv: string[], sandbox: SandboxPolicy, tty = false): Promise<number> {
  const t = performance.now();
  const r = await ex.peer.call(ExecutorMethods.exec, {
    command: argv,
    cwd: workspace,
    env,
    tty,
    yield_time_ms: 30_000,
    sandbox,
  });
  if ("error" in r) throw new Error(r.error.message);
  if (r.ok.exit_code !== 0) throw new Error(`${argv.join(" ")} exited ${r.ok.exit_code}: ${r.ok.output}`);
  return performance.now() - t;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * p50 of each way, sampled in turn so that drift in machine speed hits them alike. `idleMs`
 * before each sample stands for the seconds between a model's commands: long enough for the
 * executor's warm helper to be ready (back to back, the next one is still starting).
 */
async function compare(argv: string[], ways: Array<[string, SandboxPolicy]>, idleMs = 0): Promise<Map<string, number>> {
  const samples = new Map<string, number[]>([
    ["direct", []],
    ...ways.map(([name]) => [name, []] as [string, number[]]),
  ]);
  for (let i = 0; i < RUNS + 5; i++) {
    if (idleMs) await pause(idleMs);
    const d = await direct(argv);
    if (i >= 5) samples.get("direct")!.push(d);
    for (const [name, policy] of ways) {
      if (idleMs) await pause(idleMs);
      const v = await viaExecutor(argv, policy);
      if (i >= 5) samples.get(name)!.push(v);
    }
  }
  return new Map([...samples].map(([k, v]) => [k, summarize(v).p50]));
}

const ways: Array<[string, SandboxPolicy]> = [
  ["executor, no sandbox", UNSANDBOXED],
  ["executor, default sandbox (built-in)", sandboxed("landlock")],
];
const bwrap = probeBwrap();
if (bwrap.works) ways.push(["executor, bubblewrap", sandboxed("bwrap")]);

process.stdout.write(
  `exec: ${RUNS} runs each, relay ${relay.what}, bench on ${process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.version}`}\n`,
);
if (!bwrap.works) process.stdout.write(`(bubblewrap row left out: ${bwrap.detail})\n`);
process.stdout.write("\n");
const verdicts: string[][] = [["name", "value", "goal", ""]];
const cases: Array<{ argv: string[]; idleMs: number; label: string }> = [
  { argv: ["true"], idleMs: 0, label: "true, back to back" },
  { argv: ["true"], idleMs: 100, label: "true, 100 ms apart" },
  { argv: ["echo", "hello"], idleMs: 0, label: "echo hello, back to back" },
];
for (const c of cases) {
  const p50 = await compare(c.argv, ways, c.idleMs);
  const base = p50.get("direct")!;
  const rows = [[c.label, "p50", "ratio vs direct", "overhead"]];
  for (const [name, v] of p50)
    rows.push([name, fmtMs(v), `${(v / base).toFixed(2)}x`, name === "direct" ? "" : fmtMs(v - base)]);
  printTable(rows);
  process.stdout.write("\n");
  if (c.argv[0] !== "true") continue;
  const ratio = p50.get("executor, default sandbox (built-in)")! / base;
  verdicts.push([
    `sandboxed ${c.label} / direct spawn`,
    `${ratio.toFixed(2)}x`,
    "<= 1.50x",
    ratio <= 1.5 ? "OK" : "MISS",
  ]);
  if (c.idleMs === 0) {
    const plain = p50.get("executor, no sandbox")! / base;
    verdicts.push([
      `unsandboxed ${c.label} / direct spawn`,
      `${plain.toFixed(2)}x`,
      "<= 1.50x",
      plain <= 1.5 ? "OK" : "MISS",
    ]);
  }
}
/**
 * A session's first commands run on a fresh executor, before its code is warm: FRESH executors,
 * each started, asked for its info (as a session does) and given FRESH_COMMANDS sandboxed `true`s;
 * the p50 of commands 4 onward (the first three also wait for the container's start), against
 * direct spawns alternated with them.
 */
const FRESH = numberFlag("--fresh", 6);
const FRESH_COMMANDS = 25;
async function freshExecutorCommands(): Promise<{ fresh: number; direct: number }> {
  const [fresh, directs]: [number[], number[]] = [[], []];
  for (let e = 0; e < FRESH; e++) {
    const spawned = spawnPeer([...relay.argv, "executor"], { env: childEnv, name: "executor" });
    if ("error" in spawned) throw new Error(spawned.error.message);
    const peer = spawned.ok.peer;
    if ("error" in (await peer.call(ExecutorMethods.info, {}))) throw new Error("a fresh executor did not answer");
    for (let i = 0; i < FRESH_COMMANDS; i++) {
      const t = performance.now();
      const r = await peer.call(ExecutorMethods.exec, {
        command: ["true"],
        cwd: workspace,
        env,
        tty: false,
        yield_time_ms: 30_000,
        sandbox: sandboxed("landlock"),
      });
      if ("error" in r || r.ok.exit_code !== 0) throw new Error(`true on a fresh executor: ${JSON.stringify(r)}`);
      if (i >= 3) fresh.push(performance.now() - t);
      if (i >= 3) directs.push(await direct(["true"]));
    }
    await spawned.ok.shutdown();
  }
  return { fresh: summarize(fresh).p50, direct: summarize(directs).p50 };
}
const firsts = await freshExecutorCommands();
printTable([
  [`true on ${FRESH} fresh executors, commands 4-${FRESH_COMMANDS}`, "p50", "ratio vs direct", "overhead"],
  ["direct", fmtMs(firsts.direct), "1.00x", ""],
  [
    "fresh executor, default sandbox",
    fmtMs(firsts.fresh),
    `${(firsts.fresh / firsts.direct).toFixed(2)}x`,
    fmtMs(firsts.fresh - firsts.direct),
  ],
]);
process.stdout.write("\n");

const warmStats = await ex.peer.call(ExecutorMethods.info, {});
if ("ok" in warmStats)
  process.stdout.write(`warm sandbox helpers: ${JSON.stringify(warmStats.ok.sandbox.warm_helpers)}\n\n`);

const bytes = MB * 1_000_000;
const stream = ["sh", "-c", `head -c ${bytes} /dev/zero | tr '\\0' 'a'`];
const directStream = await direct(stream);
const ptyStream = await viaExecutor(stream, UNSANDBOXED, true);
const pipeStream = await viaExecutor(stream, UNSANDBOXED, false);
const status = readFileSync(`/proc/${ex.pid}/status`, "utf8");
const peak = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]) * 1024;
await ex.shutdown();
rmSync(scratch, { recursive: true, force: true });

const rate = (ms: number) => `${(MB / (ms / 1000)).toFixed(0)} MB/s`;
printTable([
  [`${MB} MB of output`, "time", "throughput", "ratio vs direct"],
  ["direct spawn, pipes (baseline)", fmtMs(directStream), rate(directStream), "1.00x"],
  ["executor, pipes", fmtMs(pipeStream), rate(pipeStream), `${(pipeStream / directStream).toFixed(2)}x`],
  ["executor, PTY", fmtMs(ptyStream), rate(ptyStream), `${(ptyStream / directStream).toFixed(2)}x`],
]);
process.stdout.write(
  `\nexecutor peak RSS over the whole run: ${(peak / 1048576).toFixed(1)} MiB (output buffer is capped at 1 MiB per process)\n\n`,
);
printTable(verdicts);
