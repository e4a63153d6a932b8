/**
 * Starts, tracks and polls the executor's processes. Ids are minted here; each process keeps
 * a 1 MiB head+tail buffer (with keep_full_output, all of it up to 64 MiB: full-output.ts); every
 * poll drains what it returns, so output is never repeated.
 * At most 64 processes stay open: beyond that the least recently used exited one (else the
 * least recently used one) outside the 8 most recent is killed with its whole tree.
 */

import { Buffer } from "node:buffer";
import type { ExecCommandRequest, ExecResult } from "../contracts/executor.ts";
import { killTree, killTreesNow, MARKER_VAR } from "../process/kill-tree.ts";
import { selfCommand } from "../protocol/child.ts";
import { Log } from "../util/log.ts";
import { randomHex, randomInt } from "../util/random.ts";
import { err, ok, type Result } from "../util/result.ts";
import { truncateMiddle } from "../util/truncate.ts";
import { FullOutputStore, OutputSpool, spooledPieces } from "./full-output.ts";
import { HeadTailBuffer } from "./head-tail-buffer.ts";
import * as L from "./limits.ts";
import { withRelayFirst } from "./relay-path.ts";
import { renderTerminalText, splitUtf8Tail } from "./render-output.ts";
import { loadNative } from "./sandbox/linux/confine-cc.ts";
import { type ContainerRef, containerAlive, reapContainer, startContainer } from "./sandbox/linux/container.ts";
import type { ConfinePlan } from "./sandbox/linux/plan-schema.ts";
import { ContainerSpawner, takes } from "./sandbox/linux/spawner.ts";
import { simulated } from "./sandbox/linux/support.ts";
import { WarmHelpers, type WarmLaunch } from "./sandbox/warm-helper.ts";
import { type ProcessExit, type RunningProcess, spawnProcess } from "./spawn/index.ts";

const log = Log.create("executor");

/** Whether sandboxed commands run in the executor's container, and why not when they do not. */
export interface Containment {
  ref?: ContainerRef;
  /** The container's init, which spawns pipe-mode commands without a helper. */
  spawner?: ContainerSpawner;
  detail: string;
}

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

interface Entry {
  id: number;
  proc: RunningProcess;
  command: string[];
  cwd: string;
  tty: boolean;
  startedAt: Date;
  lastUsed: number;
  lastUsedAt: Date;
  buffer: HeadTailBuffer;
  /** keep_full_output: the output the buffer could not hold. */
  spool?: OutputSpool;
  /** Incomplete UTF-8 bytes held back from the previous drain. */
  utf8Rest: Uint8Array;
  exit?: ProcessExit;
  outputDone: boolean;
  /** Wakes a collector waiting for output or exit. */
  wake?: () => void;
}

export interface ManagerOptions {
  /** Deterministic ids from 1000 (tests); random in [1000, 100000) otherwise. */
  deterministicIds?: boolean;
  /** Prefix for the marker variable that identifies this executor's children. */
  instanceId?: string;
  maxProcesses?: number;
  onExit?: (processId: number, exitCode: number) => void;
  /** Keep a sandbox helper started ahead of the next sandboxed command (default true). */
  warmHelpers?: boolean;
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
  /** undefined: not started yet; null: not available. */
  private warm: WarmHelpers | null | undefined;
  private containment: Promise<Containment> | undefined;
  readonly instanceId: string;
  private readonly maxProcesses: number;
  private readonly fullOutputs = new FullOutputStore();
  private readonly extraKills: Array<() => void> = [];

  constructor(private readonly options: ManagerOptions = {}) {
    this.instanceId = options.instanceId ?? randomHex(6);
    this.maxProcesses = options.maxProcesses ?? L.MAX_PROCESSES;
  }

  get size(): number {
    return this.store.size;
  }

  async exec(req: ExecRequest): Promise<Result<ExecResult>> {
    const started = performance.now();
    const id = this.allocateId();
    const env: Record<string, string> = {
      ...req.env,
      ...FORCED_ENV,
      ...(req.tty ? {} : PIPE_ENV),
      [MARKER_VAR]: `${this.instanceId}:${id}`,
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
    await this.collect(entry, started + yieldMs);
    if (entry.exit) {
      this.reserved.delete(id);
      entry.proc.release?.();
      return ok(this.result(entry, started, req.max_output_tokens, false));
    }
    this.pruneIfNeeded();
    this.store.set(id, entry);
    return ok(this.result(entry, started, req.max_output_tokens, true));
  }

  async write(req: {
    process_id: number;
    input?: string;
    yield_time_ms?: number;
    max_output_tokens?: number;
  }): Promise<Result<ExecResult>> {
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
    await this.collect(entry, started + yieldMs);
    if (entry.exit) {
      this.store.delete(entry.id);
      this.reserved.delete(entry.id);
      entry.proc.release?.();
      return ok(this.result(entry, started, req.max_output_tokens, false));
    }
    return ok(this.result(entry, started, req.max_output_tokens, true));
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

  /** The warm sandbox helpers, started with the first sandboxed command; none where relay cannot re-exec. */
  private warmHelpers(): WarmHelpers | undefined {
    if (this.warm === undefined) {
      const self = selfCommand();
      if ("error" in self || this.options.warmHelpers === false) {
        this.warm = null;
        return undefined;
      }
      this.warm = new WarmHelpers(self.ok, {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        [MARKER_VAR]: `${this.instanceId}:warm`,
      });
    }
    return this.warm ?? undefined;
  }

  /**
   * Starts a command: a sandboxed pipe-mode one through the container's init or else a warm
   * helper (both take the command's own environment), any other as a process of its own (a
   * cold helper also needs the helper's variables).
   */
  private async startProcess(
    req: ExecRequest,
    env: Record<string, string>,
  ): Promise<{ spawned: Result<RunningProcess>; by?: string }> {
    const pipeLaunch = req.tty ? undefined : req.warmLaunch;
    const direct = pipeLaunch && (await this.spawnInContainer(pipeLaunch, env, req.cwd));
    if (direct) return { spawned: direct, by: "container" };
    const warm = pipeLaunch && this.warmHelpers()?.take(pipeLaunch, env, req.cwd);
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

  /** Readies what the first sandboxed command under `plan` will use: the container, or spare helpers where its init will not spawn it. */
  prewarmSandbox(plan: ConfinePlan): void {
    void this.container().then(async (c) => {
      if (!(await c.spawner?.ready) || !takes(plan)) this.warmHelpers()?.warm();
    });
  }

  /** Runs a pipe-mode command through the container's init; undefined where a helper must. */
  private async spawnInContainer(
    launch: WarmLaunch,
    env: Record<string, string>,
    cwd: string,
  ): Promise<Result<RunningProcess> | undefined> {
    const c = await this.containment;
    const target = launch.plan.container;
    if (!c?.spawner || !c.ref || !target || c.ref.pid !== target.pid || c.ref.start !== target.start) return undefined;
    return c.spawner.spawn(launch, env, cwd);
  }

  /**
   * The container sandboxed commands join, started on first use (Linux, built-in sandbox) and
   * again if its init was killed; without one, what that leaves (best effort) and why.
   */
  container(): Promise<Containment> {
    const current = this.containment;
    if (current) {
      return current.then(async (c) => {
        await this.reapDeadInits();
        // A dying init still has its namespaces in /proc for a moment, but its channel has ended.
        if (!c.ref || (containerAlive(c.ref) && !c.spawner?.ended)) return c;
        if (this.containment === current) {
          this.containment = undefined;
          this.deadInits.add(c.ref.pid);
        }
        return this.container();
      });
    }
    this.containment = this.startContainer();
    return this.containment;
  }

  /** Inits of containers that died (killed from outside), until their exit is collected. */
  private readonly deadInits = new Set<number>();

  private async reapDeadInits(): Promise<void> {
    for (const pid of [...this.deadInits]) if (await reapContainer(pid)) this.deadInits.delete(pid);
  }

  private async startContainer(): Promise<Containment> {
    const self = selfCommand();
    if ("error" in self) return { detail: self.error.message };
    const started = await startContainer(self.ok);
    if ("error" in started) {
      log.warn("no container: sandboxed commands are tracked by marker and process group", {
        reason: started.error.message,
      });
      return { detail: started.error.message };
    }
    log.info("container started", { pid: started.ok.ref.pid });
    this.containerPid = started.ok.ref.pid;
    const native = await loadNative();
    // startContainer compiled it already; without it there is no container to talk to either.
    const off = simulated().noInitSpawn ? "simulated by RELAY_SANDBOX_SIMULATE=no-init-spawn" : undefined;
    const spawner = "ok" in native ? new ContainerSpawner(native.ok, started.ok.channel, off) : undefined;
    return {
      ref: started.ok.ref,
      spawner,
      detail: "sandboxed commands run in the executor's pid namespace and end with it",
    };
  }

  /** The container's init, if one was started (synchronously, for exit handlers). */
  private containerPid: number | undefined;

  /** How often a sandboxed command found a warm helper (hits) or had to start one (misses). */
  warmStats(): { hits: number; misses: number } {
    return { hits: this.warm?.hits ?? 0, misses: this.warm?.misses ?? 0 };
  }

  /** Also run `fn` (synchronously) whenever killAllNow runs: other process owners of this executor. */
  alsoOnKillAll(fn: () => void): void {
    this.extraKills.push(fn);
  }

  /** Kills every process this manager started, synchronously (safe in exit handlers). */
  killAllNow(): void {
    for (const fn of this.extraKills) fn();
    // A spare that was never taken is still reading its request: it has started nothing.
    for (const spare of this.warm?.stop() ?? []) killNow(spare);
    killTreesNow(
      [...this.store.values()]
        .filter((e) => !e.exit)
        .map((e) => ({ leader: e.proc.pid, marker: `${this.instanceId}:${e.id}` })),
    );
    // Ending the container's init ends every process still inside it, background jobs too.
    if (this.containerPid !== undefined) killNow(this.containerPid);
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

  /** Waits until the deadline, or until the process has exited and its output has drained. */
  private async collect(entry: Entry, deadline: number): Promise<void> {
    for (;;) {
      if (entry.exit) {
        if (!entry.outputDone)
          await this.waitForEvent(entry, Math.min(deadline, performance.now() + L.TRAILING_OUTPUT_GRACE_MS));
        return;
      }
      const now = performance.now();
      if (now >= deadline) return;
      await this.waitForEvent(entry, deadline);
    }
  }

  private waitForEvent(entry: Entry, until: number): Promise<void> {
    const ms = Math.max(0, until - performance.now());
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        entry.wake = undefined;
        resolve();
      }
      // Output alone does not end a wait: only exit, stream close or the deadline do.
      entry.wake = () => {
        if (entry.exit) done();
      };
    });
  }

  private result(entry: Entry, started: number, maxTokens: number | undefined, running: boolean): ExecResult {
    const { text, gapBytes } = this.takeOutput(entry, running);
    const t = truncateMiddle(text, maxTokens ?? L.DEFAULT_MAX_OUTPUT_TOKENS);
    const full =
      entry.spool && t.truncated && t.cutLines ? { ...this.fullOutputs.hold(text), cut_lines: t.cutLines } : undefined;
    return {
      chunk_id: randomHex(3),
      wall_time_seconds: Math.round(performance.now() - started) / 1000,
      ...(entry.exit ? { exit_code: entry.exit.code } : {}),
      ...(running ? { process_id: entry.id } : {}),
      original_token_count: t.originalTokens,
      total_lines: t.totalLines,
      truncated: t.truncated,
      omitted_bytes: gapBytes,
      output: t.text,
      ...(full ? { full_output: { ...full, dropped_bytes: gapBytes, limit_bytes: this.fullOutputs.limitBytes } } : {}),
    };
  }

  /**
   * What this poll returns, as text: the buffer's head and tail (a marker where it dropped
   * bytes), or with keep_full_output the whole output since the last poll.
   */
  private takeOutput(entry: Entry, running: boolean): { text: string; gapBytes: number } {
    const drained = entry.buffer.drain();
    const held = entry.utf8Rest;
    let bytes: Uint8Array = held.length ? Buffer.concat([held, drained.bytes]) : drained.bytes;
    entry.utf8Rest = new Uint8Array(0);
    if (running) {
      const split = splitUtf8Tail(bytes);
      bytes = split.complete;
      entry.utf8Rest = split.rest;
    }
    const spooled = entry.spool?.take();
    if (spooled) {
      const p = spooledPieces(held, spooled, drained.bytes.subarray(drained.headBytes), entry.utf8Rest.length);
      return {
        text: withGap(
          p.head,
          p.tail,
          p.gapBytes,
          `the ${this.fullOutputs.limitBytes / (1024 * 1024)} MiB kept in full`,
        ),
        gapBytes: p.gapBytes,
      };
    }
    // The gap is exactly where the buffer dropped bytes: between its head and its tail.
    const cut = Math.min(bytes.length, held.length + drained.headBytes);
    return {
      text: withGap(bytes.subarray(0, cut), bytes.subarray(cut), drained.omittedBytes, "the 1 MiB buffer"),
      gapBytes: drained.omittedBytes,
    };
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

/** Head and tail as text; where `gapBytes` were dropped between them, a line that says so. */
function withGap(head: Uint8Array, tail: Uint8Array, gapBytes: number, over: string): string {
  const decode = (b: Uint8Array) => renderTerminalText(Buffer.from(b).toString("utf8"));
  if (gapBytes === 0) return decode(Buffer.concat([head, tail]));
  return `${decode(head)}\n[… ${gapBytes} bytes of output were dropped here (over ${over}) …]\n${decode(tail)}`;
}
