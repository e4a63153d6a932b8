/**
 * Start-up and turn figures of the compiled binary, each against its goal, in one run:
 *   bun scripts/bench/startup.ts [--binary dist/relay] [--before OLD_BINARY] [--runs 15] [--turn-runs 5] [--quick]
 *                                [--only startup|turns|codemode]
 * Prints `name value goal OK|MISS` lines (and `#` lines of context), so a regression is one grep
 * away. Ratios compare against a hello-world binary compiled by the same Bun in this same run,
 * pair by pair (A B A B …), so a machine that slows down mid-run slows both sides alike.
 *
 *  - start-up: `relay --version`; `relay executor` and `relay code-mode-host` until they answer
 *    their first request; the sandbox helper running `true`. Goal: ≤ 1.5x the hello-world.
 *  - turns: `relay run` against the fake model server (loopback SSE) with no tools, and with 20
 *    `true` tool calls; the per-tool-call gap (server receives the tool output minus it finished
 *    sending the call), and a `#` line splitting it into the command as the executor timed it
 *    and the rest, beside `bash -c true` spawned directly; peak PSS of the whole process tree.
 *  - code mode: scripts/bench/codemode.ts with the compiled host, on a quiet machine and with a
 *    CPU hog on every core.
 * --before times an older build's start-up in the same pairs too, and runs its turns in turn with
 * this build's (a `#` line each: what changed).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { prepareSandbox } from "../../src/sandbox/index.ts";
import { type FakeModelServer, reply, startFakeModelServer } from "../../test/support/fake-model-server.ts";
import { buildBinary } from "../build.ts";
import { type ProcessRun, peakTreeMemory, timeProcess } from "./procs.ts";
import { goalLine, numberFlag, percentile, ROOT } from "./stats.ts";

const QUICK = process.argv.includes("--quick");
const onlyAt = process.argv.indexOf("--only");
const ONLY = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined;
const section = (name: string) => ONLY === undefined || ONLY === name;
const RUNS = numberFlag("--runs", QUICK ? 5 : 15);
const TURN_RUNS = numberFlag("--turn-runs", QUICK ? 2 : 5);
const binaryAt = process.argv.indexOf("--binary");
const BINARY_ARG = path.resolve(binaryAt >= 0 ? process.argv[binaryAt + 1]! : path.join(ROOT, "dist/relay"));
const beforeAt = process.argv.indexOf("--before");
const BEFORE_ARG = beforeAt >= 0 ? path.resolve(process.argv[beforeAt + 1]!) : undefined;
const BUN = process.versions.bun ? process.execPath : path.join(ROOT, "node_modules/.bin/bun");
const work = mkdtempSync(path.join(os.tmpdir(), "relay-bench-startup-"));
/**
 * Every binary runs from a copy written at the start of this run (freshCopy): how a file's pages
 * came into the page cache moves a start-up by 20-30% (one binary: 11.3 ms as bun wrote it
 * minutes earlier, 10.0 for a fresh copy; a copy made hours earlier 11.7 against 8.2 for a fresh
 * copy of it), so binaries compared must all be in the same state.
 */
const BINARY = path.join(work, "relay");
const BEFORE = BEFORE_ARG ? path.join(work, "relay-before") : undefined;

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** One result line: `name value goal OK|MISS` (lower is better). */
function judge(name: string, value: number, goal: number, digits = 2): void {
  process.stdout.write(`${goalLine(name, value, goal, digits)}\n`);
}
const note = (text: string) => process.stdout.write(`# ${text}\n`);

// ---------------------------------------------------------------------------------------------
// The binaries.

/** Prints a line, or with `serve` answers one frame, as the smallest program Bun compiles does. */
const HELLO_SOURCE = `
if (process.argv[2] === "serve") {
  let buf = Buffer.alloc(0);
  process.stdin.on("data", (c) => {
    buf = Buffer.concat([buf, c]);
    if (buf.length < 4 || buf.length < 4 + buf.readUInt32BE(0)) return;
    const msg = JSON.parse(buf.subarray(4, 4 + buf.readUInt32BE(0)).toString());
    const out = Buffer.from(JSON.stringify({ type: "response", id: msg.id, result: { ok: {} } }));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(out.length);
    process.stdout.write(Buffer.concat([head, out]));
  });
} else console.log("hello");
`;

function compileHello(): string {
  const dir = path.join(work, "hello");
  mkdirSync(dir);
  writeFileSync(path.join(dir, "hello.js"), HELLO_SOURCE);
  const out = path.join(dir, "hello");
  const r = spawnSync(
    BUN,
    ["build", "--compile", "--bytecode", "--minify", "--format=esm", "hello.js", "--outfile", out],
    { cwd: dir, encoding: "utf8" },
  );
  if (r.status !== 0) throw new Error(`compiling the hello-world failed: ${r.stderr}`);
  return out;
}

function ensureBinary(): void {
  if (existsSync(BINARY_ARG)) return;
  note(`no ${BINARY_ARG}: building it`);
  buildBinary({ outfile: BINARY_ARG });
}

/** `from`, copied to `to` (executable): its pages enter the page cache as a fresh write's do. */
function freshCopy(from: string, to: string): string {
  copyFileSync(from, to);
  chmodSync(to, 0o755);
  return to;
}

// ---------------------------------------------------------------------------------------------
// Start-up against the hello-world.

interface StartupCase {
  name: string;
  relay: string[];
  hello: string[];
  env?: Record<string, string>;
  request?: unknown;
}

/** The helper exactly as the executor starts it for a read-only `true` (no container, no warm spare). */
async function sandboxHelperCase(): Promise<{ argv: string[]; env: Record<string, string> }> {
  process.env.RELAY_SELF_COMMAND = joinCommandLine([BINARY]);
  const env = { ...process.env } as Record<string, string>;
  const attempt = await prepareSandbox(
    ["/bin/true"],
    { mode: "read-only", writable_roots: [], network: false },
    { cwd: work, tty: false, env },
  );
  if ("error" in attempt) throw new Error(`the built-in sandbox cannot run here: ${attempt.error.message}`);
  if (attempt.ok.mechanism !== "landlock")
    throw new Error(`the sandbox here is ${attempt.ok.mechanism}, not relay's own helper`);
  return { argv: attempt.ok.argv, env: attempt.ok.env ?? {} };
}

async function startupCases(hello: string): Promise<StartupCase[]> {
  const request = (method: string) => ({ type: "request", id: 1, method, params: {} });
  const helper = await sandboxHelperCase();
  return [
    { name: "version", relay: [BINARY, "--version"], hello: [hello] },
    { name: "executor", relay: [BINARY, "executor"], hello: [hello, "serve"], request: request("executor/info") },
    {
      name: "code_mode_host",
      relay: [BINARY, "code-mode-host"],
      hello: [hello, "serve"],
      request: request("codemode/hello"),
    },
    { name: "sandbox_helper", relay: helper.argv, hello: [hello], env: helper.env },
  ];
}

async function startupFigures(hello: string): Promise<void> {
  const home = path.join(work, "home");
  for (const c of await startupCases(hello)) {
    const env = { ...process.env, RELAY_HOME: home, ...c.env };
    const pairs: Array<[ProcessRun, ProcessRun]> = [];
    const before: number[] = [];
    const older = BEFORE ? c.relay.map((a) => (a === BINARY ? BEFORE : a)) : undefined;
    await timeProcess(c.relay, env, c.request); // warm-up: page cache, first log file
    for (let i = 0; i < RUNS; i++) {
      pairs.push([await timeProcess(c.relay, env, c.request), await timeProcess(c.hello, env, c.request)]);
      if (older) before.push((await timeProcess(older, env, c.request)).cpuMs / pairs[i]![0].cpuMs);
    }
    if (older) note(`${c.name}: the --before build takes ${median(before).toFixed(2)}x this build's CPU`);
    const relayWall = median(pairs.map(([a]) => a.wallMs));
    const helloWall = median(pairs.map(([, b]) => b.wallMs));
    note(
      `${c.name}: relay ${relayWall.toFixed(1)} ms wall, ${median(pairs.map(([a]) => a.cpuMs)).toFixed(1)} ms cpu, ${median(pairs.map(([a]) => a.maxRssMiB)).toFixed(1)} MiB; hello-world ${helloWall.toFixed(1)} ms wall, ${median(pairs.map(([, b]) => b.cpuMs)).toFixed(1)} ms cpu (median of ${RUNS})`,
    );
    judge(`startup.${c.name}.wall_ratio`, median(pairs.map(([a, b]) => a.wallMs / b.wallMs)), 1.5);
    judge(`startup.${c.name}.cpu_ratio`, median(pairs.map(([a, b]) => a.cpuMs / Math.max(b.cpuMs, 0.001))), 1.5);
  }
}

// ---------------------------------------------------------------------------------------------
// relay run turns against the fake model server.

interface TurnCase {
  name: string;
  toolCalls: number;
  sandbox: "workspace-write" | "danger-full-access";
  wallGoalMs: number;
}

const TURNS: TurnCase[] = [
  { name: "no_tools", toolCalls: 0, sandbox: "workspace-write", wallGoalMs: 150 },
  { name: "tools_20", toolCalls: 20, sandbox: "workspace-write", wallGoalMs: 350 },
  { name: "tools_20_unsandboxed", toolCalls: 20, sandbox: "danger-full-access", wallGoalMs: 350 },
];

function enqueueTurn(server: FakeModelServer, calls: number): void {
  for (let i = 0; i < calls; i++)
    server.enqueue(reply().toolCall("exec_command", { cmd: "true" }).usage({ input: 100, output: 10 }));
  server.enqueue(reply().text("done").usage({ input: 100, output: 5 }));
}

function runArgv(binary: string, server: FakeModelServer, c: TurnCase, cwd: string): string[] {
  return [
    binary,
    "run",
    "--json",
    "--base-url",
    server.baseUrl,
    "-m",
    "bench",
    "-s",
    c.sandbox,
    "-C",
    cwd,
    "run true as asked",
  ];
}

interface TurnRun {
  wallMs: number;
  gaps: number[];
  /** Per call, what the executor reported as the command's wall time (its request in to its answer out). */
  commandMs: number[];
  /** User + system CPU of `relay run` and the children it waited for (its executor and theirs). */
  cpuMs: number;
  pssMiB?: number;
  rssMiB?: number;
}

/**
 * The "Wall time: S seconds" of the last tool output in a request body: the executor's own
 * measure of one `exec_command` (its request in to its answer out, in whole milliseconds).
 */
function reportedWallMs(body: unknown): number {
  const input = (body as { input?: Array<{ type?: string; output?: unknown }> }).input ?? [];
  const last = input.filter((item) => item.type === "function_call_output").at(-1);
  const seconds = /Wall time: ([\d.]+) seconds/.exec(typeof last?.output === "string" ? last.output : "")?.[1];
  if (seconds === undefined) throw new Error("a tool output without its Wall time line");
  return Number(seconds) * 1000;
}

/** One `relay run` of `binary`; with `sampleMemory`, the tree's peak instead of a clean time. */
async function oneTurn(server: FakeModelServer, c: TurnCase, sampleMemory: boolean, binary = BINARY): Promise<TurnRun> {
  const cwd = mkdtempSync(path.join(work, "ws-"));
  const env = { ...process.env, RELAY_HOME: mkdtempSync(path.join(work, "home-")), OPENAI_API_KEY: "bench" };
  const first = server.requests.length;
  enqueueTurn(server, c.toolCalls);
  const started = performance.now();
  const child = Bun.spawn(runArgv(binary, server, c, cwd), { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const memory = sampleMemory ? await peakTreeMemory(child.pid, child.exited) : undefined;
  const code = await child.exited;
  const wallMs = performance.now() - started;
  if (code !== 0)
    throw new Error(`relay run exited ${code}: ${(await new Response(child.stderr).text()).slice(-2000)}`);
  const reqs = server.requests.slice(first);
  if (reqs.length !== c.toolCalls + 1)
    throw new Error(`expected ${c.toolCalls + 1} model requests, the server saw ${reqs.length}`);
  const gaps = reqs.slice(1).map((r, i) => r.receivedAtMs - reqs[i]!.repliedAtMs!);
  const commandMs = reqs.slice(1).map((r) => reportedWallMs(r.body));
  const cpu = child.resourceUsage()?.cpuTime;
  const cpuMs = cpu ? (Number(cpu.user) + Number(cpu.system)) / 1000 : Number.NaN;
  return { wallMs, gaps, commandMs, cpuMs, ...(memory ? { pssMiB: memory.pssMiB, rssMiB: memory.rssMiB } : {}) };
}

/** `runs` turns of this build, and of the --before build in turn with them (A B A B …), so both see the same machine. */
async function turnRuns(
  server: FakeModelServer,
  c: TurnCase,
  runs: number,
): Promise<{ now: TurnRun[]; before: TurnRun[] }> {
  const now: TurnRun[] = [];
  const before: TurnRun[] = [];
  for (let i = 0; i < runs; i++) {
    now.push(await oneTurn(server, c, false));
    if (BEFORE) before.push(await oneTurn(server, c, false, BEFORE));
  }
  return { now, before };
}

/**
 * The gap in two: the command as the executor timed it, and the rest (relay run's handling, the
 * frames to and from the executor, the model request, the fake server). The first holds the
 * machine's cost of starting `bash -c true`, which no change to relay removes.
 */
function noteGapSplit(name: string, runs: TurnRun[]): void {
  const command = median(runs.flatMap((r) => r.commandMs));
  const rest = median(runs.flatMap((r) => r.gaps.map((gap, i) => gap - r.commandMs[i]!)));
  const direct = directSpawnMs();
  note(
    `${name}: of the gap, the command in the executor (request in to answer out) p50 ${command.toFixed(1)} ms, the rest p50 ${rest.toFixed(2)} ms; \`bash -c true\` spawned directly here p50 ${direct.toFixed(2)} ms; a page's first touch ${firstTouchUs().toFixed(1)} µs`,
  );
}

/**
 * What a page fault costs on this machine now (µs per 4 KiB page written for the first time,
 * median of 5 buffers of 64 MiB): every process start pays a few hundred, so a sitting where it is
 * slow has slow spawns throughout (docs/performance.md, "The gap, process by process").
 */
function firstTouchUs(): number {
  const PAGE = 4096;
  const PAGES = 16_384;
  const perPage: number[] = [];
  for (let r = 0; r < 5; r++) {
    const bytes = new Uint8Array(new ArrayBuffer(PAGES * PAGE));
    let started = performance.now();
    for (let i = 0; i < bytes.length; i += PAGE) bytes[i] = 1;
    const first = performance.now() - started;
    started = performance.now();
    for (let i = 0; i < bytes.length; i += PAGE) bytes[i] = 2;
    const again = performance.now() - started;
    perPage.push(((first - again) / PAGES) * 1000);
  }
  return median(perPage);
}

/** p50 of spawning `bash -c true` from this process and waiting for it, as the executor would. */
function directSpawnMs(): number {
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const started = performance.now();
    spawnSync("bash", ["-c", "true"], { stdio: "ignore" });
    times.push(performance.now() - started);
  }
  return median(times);
}

async function turnFigures(): Promise<void> {
  const server = await startFakeModelServer();
  try {
    for (const c of TURNS) {
      await oneTurn(server, c, false); // warm-up
      if (BEFORE) await oneTurn(server, c, false, BEFORE);
      const { now: runs, before } = await turnRuns(server, c, TURN_RUNS);
      const mem = await oneTurn(server, c, true);
      judge(`turn.${c.name}.wall_ms`, median(runs.map((r) => r.wallMs)), c.wallGoalMs, 1);
      if (c.toolCalls > 0) {
        judge(`turn.${c.name}.gap_p50_ms`, median(runs.flatMap((r) => r.gaps)), 5);
        noteGapSplit(c.name, runs);
      }
      judge(`turn.${c.name}.tree_pss_mib`, mem.pssMiB!, 50, 1);
      note(
        `${c.name}: tree RSS summed ${mem.rssMiB!.toFixed(1)} MiB (shared pages counted per process); tree CPU ${median(runs.map((r) => r.cpuMs)).toFixed(1)} ms; median of ${TURN_RUNS} runs, sandbox ${c.sandbox}`,
      );
      if (BEFORE) {
        const gap = c.toolCalls > 0 ? `, gap p50 ${median(before.flatMap((r) => r.gaps)).toFixed(2)} ms` : "";
        note(
          `${c.name}: the --before build, in turn with these runs: wall ${median(before.map((r) => r.wallMs)).toFixed(1)} ms${gap}, tree CPU ${median(before.map((r) => r.cpuMs)).toFixed(1)} ms`,
        );
      }
    }
  } finally {
    await server.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Code mode with the compiled host, quiet and with a CPU hog on every core.

interface CodeModeFigures {
  inProcess: Record<string, number>;
  ipc: Record<string, number>;
}

function codeModeRun(): CodeModeFigures {
  const rounds = QUICK ? "40" : "150";
  const r = spawnSync(
    BUN,
    [path.join(ROOT, "scripts/bench/codemode.ts"), "--json", "--rounds", rounds, "--cold", QUICK ? "3" : "8"],
    {
      env: { ...process.env, RELAY_SELF_COMMAND: BINARY },
      encoding: "utf8",
      timeout: 300_000,
    },
  );
  if (r.status !== 0) throw new Error(`scripts/bench/codemode.ts failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as CodeModeFigures;
}

/** One busy loop per core, each ending by itself after `seconds` even if this script dies. */
function startHogs(seconds: number): Array<{ kill(): void }> {
  const loop = `const end = Date.now() + ${seconds * 1000}; while (Date.now() < end) {}`;
  return os.cpus().map(() => Bun.spawn([BUN, "-e", loop], { stdin: "ignore", stdout: "ignore", stderr: "ignore" }));
}

function codeModeFigures(): void {
  for (const mode of ["quiet", "busy"] as const) {
    const hogs = mode === "busy" ? startHogs(300) : [];
    let f: CodeModeFigures;
    try {
      f = codeModeRun();
    } finally {
      for (const h of hogs) h.kill();
    }
    judge(`codemode.${mode}.session_startup_ms`, f.ipc.startup!, 2.6);
    judge(`codemode.${mode}.fresh_session_command_ms`, f.ipc.fresh!, 7);
    judge(`codemode.${mode}.warm_provisioning_ms`, f.ipc.provision!, 0.5);
    judge(`codemode.${mode}.warm_overhead_p50_ms`, f.ipc.warm! - f.inProcess.warm!, 0.2, 3);
    note(
      `code mode ${mode}: warm command p50 in-process ${f.inProcess.warm!.toFixed(3)} ms, IPC ${f.ipc.warm!.toFixed(3)} ms; back to back ${f.inProcess.burst!.toFixed(3)} vs ${f.ipc.burst!.toFixed(3)} ms`,
    );
  }
}

// ---------------------------------------------------------------------------------------------

try {
  ensureBinary();
  freshCopy(BINARY_ARG, BINARY);
  if (BEFORE_ARG && BEFORE) freshCopy(BEFORE_ARG, BEFORE);
  const hello = freshCopy(compileHello(), path.join(work, "hello-world"));
  note(
    `${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? "?"}, bun ${process.versions.bun ?? "?"}; binary ${BINARY_ARG}${BEFORE_ARG ? `, before ${BEFORE_ARG}` : ""} (both run from fresh copies)`,
  );
  if (section("startup")) await startupFigures(hello);
  if (section("turns")) await turnFigures();
  if (section("codemode")) codeModeFigures();
} finally {
  rmSync(work, { recursive: true, force: true });
}
