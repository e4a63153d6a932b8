/**
 * Starts, tracks and polls the executor's processes. Ids are minted here; each process keeps
 * a 1 MiB head+tail buffer (with keep_full_output, all of it up to 64 MiB: full-output.ts); every
 * poll drains what it returns, so output is never repeated (tracked-process.ts). Sandboxed
 * pipe-mode commands start through the container's init or a warm helper (sandbox/launchers.ts).
 * At most 64 processes stay open: beyond that the least recently used exited one (else the
 * least recently used one) outside the 8 most recent is killed with its whole tree.
 */

import type { ExecCommandRequest, ExecResult } from "../contracts/executor.ts";
import { killTree, killTreesNow, MARKER_VAR } from "../process/kill-tree.ts";
import { type RunningProcess, type SpawnErrorCode, spawnProcess, type WriteErrorCode } from "../process/spawn/index.ts";
import { type ConfinePlan, type Containment, SandboxLaunchers, type WarmLaunch } from "../sandbox/index.ts";
import { Log } from "../util/log.ts";
import { randomHex, randomInt } from "../util/random.ts";
import { err, ok, type Result } from "../util/result.ts";
import { FullOutputStore, OutputSpool } from "./full-output.ts";
import { HeadTailBuffer } from "./head-tail-buffer.ts";
import * as L from "./limits.ts";
import { withRelayFirst } from "./relay-path.ts";
import { collect, type Entry, pollResult } from "./tracked-process.ts";

const log = Log.create("executor");

/** Variables forced on every child, over whatever the orchestrator sent. */
export const FORCED_ENV: Readonly<Record<string, string>> = {
  NO_COLOR: "1",
  TERM: "dumb",
  COLORTERM: "",
  LANG: "C.UTF-8",
  LC_CTYPE: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  PAGER: "cat",
  GIT_PAGER: "cat",
  GH_PAGER: "cat",
};

/** With stdin closed nothing can answer a prompt, so ask tools not to prompt at all. */
const PIPE_ENV: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: "0",
  DEBIAN_FRONTEND: "noninteractive",
};

export interface ManagerOptions {
  /** Deterministic ids from 1000 (tests); random in [1000, 100000) otherwise. */
  deterministicIds?: boolean;
  /** Prefix for the marker variable that identifies this executor's children. */
  instanceId?: string;
  maxProcesses?: number;
  onExit?: (processId: number, exitCode: number) => void;
  /** Keep a sandbox helper started ahead of the next sandboxed command (default true). */
  warmHelpers?: boolean;
  /** Runs before each process that carries the marker is started (relay executor starts its death guard on the first). */
  beforeMarkedSpawn?: () => void;
}

/** A command to start, with what the sandbox attempt made of it. */
type ExecRequest = ExecCommandRequest & {
  sandboxedArgv?: string[];
  sandboxEnv?: Record<string, string>;
  warmLaunch?: WarmLaunch;
};

export class ProcessManager {
  private readonly store = new Map<number, Entry>();
  private readonly reserved = new Set<number>();
  private useCounter = 0;
  readonly instanceId: string;
  private readonly maxProcesses: number;
  private readonly fullOutputs = new FullOutputStore();
  private readonly extraKills: Array<() => void> = [];
  private readonly sandbox: SandboxLaunchers;

  constructor(private readonly options: ManagerOptions = {}) {
    this.instanceId = options.instanceId ?? randomHex(6);
    this.maxProcesses = options.maxProcesses ?? L.MAX_PROCESSES;
    this.sandbox = new SandboxLaunchers((suffix) => this.marker(suffix), options.warmHelpers !== false);
  }

  /** The marker value of a process about to start (`<instance>:<suffix>`), once whatever must precede it has run. */
  marker(suffix: string | number): string {
    this.options.beforeMarkedSpawn?.();
    return `${this.instanceId}:${suffix}`;
  }

  get size(): number {
    return this.store.size;
  }

  async exec(req: ExecRequest): Promise<Result<ExecResult, SpawnErrorCode>> {
    const started = performance.now();
    const id = this.allocateId();
    const env: Record<string, string> = {
      ...req.env,
      ...FORCED_ENV,
      ...(req.tty ? {} : PIPE_ENV),
      [MARKER_VAR]: this.marker(id),
    };
    // `relay` in a command is this executor's own binary.
    env.PATH = withRelayFirst(req.env?.PATH);
    const { spawned, by } = await this.startProcess(req, env);
    if ("error" in spawned) {
      this.reserved.delete(id);
      log.warn("spawn failed", { process_id: id, code: spawned.error.code, message: spawned.error.message });
      return spawned;
    }
    log.debug("spawned", { process_id: id, pid: spawned.ok.pid, by });
    const entry: Entry = {
      id,
      proc: spawned.ok,
      command: req.command,
      cwd: req.cwd,
      tty: req.tty ?? false,
      startedAt: new Date(),
      lastUsed: ++this.useCounter,
      lastUsedAt: new Date(),
      buffer: new HeadTailBuffer(L.OUTPUT_BUFFER_BYTES),
      ...(req.keep_full_output ? { spool: new OutputSpool(this.fullOutputs) } : {}),
      utf8Rest: new Uint8Array(0),
      outputDone: false,
    };
    this.attach(entry);
    const yieldMs = L.clamp(
      req.yield_time_ms ?? L.DEFAULT_EXEC_YIELD_TIME_MS,
      L.MIN_YIELD_TIME_MS,
      L.MAX_YIELD_TIME_MS,
    );
    await collect(entry, started + yieldMs);
    if (entry.exit) {
      this.reserved.delete(id);
      entry.proc.release?.();
      return ok(pollResult(entry, started, req.max_output_tokens, false, this.fullOutputs));
    }
    this.pruneIfNeeded();
    this.store.set(id, entry);
    return ok(pollResult(entry, started, req.max_output_tokens, true, this.fullOutputs));
  }

  async write(req: {
    process_id: number;
    input?: string;
    yield_time_ms?: number;
    max_output_tokens?: number;
  }): Promise<Result<ExecResult, "unknown_process" | WriteErrorCode>> {
    const started = performance.now();
    const entry = this.store.get(req.process_id);
    if (!entry) return err("unknown_process", `Unknown process id ${req.process_id}`);
    entry.lastUsed = ++this.useCounter;
    entry.lastUsedAt = new Date();
    const input = req.input ?? "";
    let yieldMs: number;
    if (input.length > 0) {
      if (entry.exit) {
        // fall through to report the exit; writing to a dead process is pointless
      } else {
        const w = entry.proc.write(input);
        if ("error" in w) return w;
      }
      yieldMs = L.clamp(req.yield_time_ms ?? L.DEFAULT_WRITE_YIELD_TIME_MS, L.MIN_YIELD_TIME_MS, L.MAX_YIELD_TIME_MS);
    } else {
      yieldMs = L.clamp(req.yield_time_ms ?? L.DEFAULT_WRITE_YIELD_TIME_MS, L.MIN_EMPTY_POLL_MS, L.MAX_EMPTY_POLL_MS);
    }
    await collect(entry, started + yieldMs);
    if (entry.exit) {
      this.store.delete(entry.id);
      this.reserved.delete(entry.id);
      entry.proc.release?.();
      return ok(pollResult(entry, started, req.max_output_tokens, false, this.fullOutputs));
    }
    return ok(pollResult(entry, started, req.max_output_tokens, true, this.fullOutputs));
  }

  /** Kills a stored process and its tree. */
  async terminate(processId: number): Promise<{ running: boolean }> {
    const entry = this.store.get(processId);
    if (!entry) return { running: false };
    this.store.delete(processId);
    this.reserved.delete(processId);
    entry.spool?.take();
    const running = !entry.exit;
    if (running) await killTree(entry.proc.pid, `${this.instanceId}:${entry.id}`);
    entry.proc.release?.();
    return { running };
  }

  list() {
    return [...this.store.values()].map((e) => ({
      process_id: e.id,
      pid: e.proc.pid,
      command: e.command,
      cwd: e.cwd,
      tty: e.tty,
      running: !e.exit,
      ...(e.exit ? { exit_code: e.exit.code } : {}),
      started_at: e.startedAt.toISOString(),
      last_used_at: e.lastUsedAt.toISOString(),
    }));
  }

  /**
   * Starts a command: a sandboxed pipe-mode one through the container's init or else a warm
   * helper (both take the command's own environment), any other as a process of its own (a
   * cold helper also needs the helper's variables).
   */
  private async startProcess(
    req: ExecRequest,
    env: Record<string, string>,
  ): Promise<{ spawned: Result<RunningProcess, SpawnErrorCode>; by?: string }> {
    const pipeLaunch = req.tty ? undefined : req.warmLaunch;
    const direct = pipeLaunch && (await this.sandbox.spawnInContainer(pipeLaunch, env, req.cwd));
    if (direct) return { spawned: direct, by: "container" };
    const warm = pipeLaunch && this.sandbox.warmHelpers()?.take(pipeLaunch, env, req.cwd);
    if (warm) return { spawned: ok(warm), by: "warm helper" };
    const argv = req.sandboxedArgv ?? req.command;
    return {
      spawned: spawnProcess({
        argv,
        cwd: req.cwd,
        env: { ...env, ...req.sandboxEnv },
        tty: req.tty ?? false,
        cols: req.cols,
        rows: req.rows,
      }),
    };
  }

  /** Notes the plan `sandbox/check` found, for prewarmSandbox. */
  noteSandboxPlan(plan: ConfinePlan): void {
    this.sandbox.notePlan(plan);
  }

  /** Readies what the first sandboxed command will use: the container, or spare helpers where its init will not spawn it. */
  prewarmSandbox(containerToo: boolean): void {
    this.sandbox.prewarmSandbox(containerToo);
  }

  /**
   * The container sandboxed commands join, started on first use (Linux, built-in sandbox) and
   * again if its init was killed; without one, what that leaves (best effort) and why.
   */
  container(): Promise<Containment> {
    return this.sandbox.container();
  }

  /** How often a sandboxed command found a warm helper (hits) or had to start one (misses). */
  warmStats(): { hits: number; misses: number } {
    return this.sandbox.warmStats();
  }

  /** Also run `fn` (synchronously) whenever killAllNow runs: other process owners of this executor. */
  alsoOnKillAll(fn: () => void): void {
    this.extraKills.push(fn);
  }

  /** Kills every process this manager started, synchronously (safe in exit handlers). */
  killAllNow(): void {
    for (const fn of this.extraKills) fn();
    // A spare that was never taken is still reading its request: it has started nothing.
    for (const spare of this.sandbox.stopWarmHelpers()) killNow(spare);
    killTreesNow(
      [...this.store.values()]
        .filter((e) => !e.exit)
        .map((e) => ({ leader: e.proc.pid, marker: `${this.instanceId}:${e.id}` })),
    );
    // Ending the container's init ends every process still inside it, background jobs too.
    const init = this.sandbox.initPid;
    if (init !== undefined) killNow(init);
    this.store.clear();
    this.reserved.clear();
    this.fullOutputs.clear();
  }

  /** Whether `id` is still tracked (for tests and listings). */
  has(id: number): boolean {
    return this.store.has(id);
  }

  private allocateId(): number {
    if (this.options.deterministicIds) {
      // Ids released on exit are reused: the next id follows the highest one still reserved.
      const id = Math.max(999, ...this.reserved) + 1;
      this.reserved.add(id);
      return id;
    }
    for (;;) {
      const id = randomInt(1000, 100_000);
      if (!this.reserved.has(id)) {
        this.reserved.add(id);
        return id;
      }
    }
  }

  private attach(entry: Entry): void {
    entry.proc.onData((chunk) => {
      entry.spool?.push(chunk, entry.buffer);
      entry.buffer.push(chunk);
      entry.wake?.();
    });
    void entry.proc.exited.then((exit) => {
      entry.exit = exit;
      entry.wake?.();
      if (this.store.has(entry.id)) this.options.onExit?.(entry.id, exit.code);
    });
    void entry.proc.outputClosed.then(() => {
      entry.outputDone = true;
      entry.wake?.();
    });
  }

  /** A full output held for `process/read_output`. */
  readOutput(req: { id: string; offset: number; max_bytes: number }) {
    return this.fullOutputs.read(req.id, req.offset, req.max_bytes);
  }

  private pruneIfNeeded(): void {
    if (this.store.size < this.maxProcesses) return;
    const byRecency = [...this.store.values()].sort((a, b) => b.lastUsed - a.lastUsed);
    const candidates = byRecency.slice(L.PROTECTED_RECENT_PROCESSES).reverse(); // least recent first
    const victim = candidates.find((e) => e.exit) ?? candidates[0];
    if (!victim) return;
    this.store.delete(victim.id);
    this.reserved.delete(victim.id);
    victim.spool?.take();
    if (victim.exit) victim.proc.release?.();
    else void killTree(victim.proc.pid, `${this.instanceId}:${victim.id}`, 0).then(() => victim.proc.release?.());
  }
}

/** SIGKILL one process whose tree need not be looked for. */
function killNow(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
