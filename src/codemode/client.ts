/**
 * Code-mode providers. `HostProvider` multiplexes sessions over one `code-mode-host` process
 * (spawned lazily, optionally pre-spawned) and answers its delegate requests through each
 * session's callbacks; `InProcessProvider` runs the same engine without IPC.
 */
import { findOnPath, isExecutableFile } from "../util/which.ts";
import { rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnPeer, spawnSelf, type ChildPeer } from "../protocol/child.ts";
import { err, ok, type Result } from "../util/result.ts";
import { CodeModeEngine, type EngineSession } from "./engine.ts";
import { CodeModeErrorCode, CodeModeMethods, CodeModeNotifications, type ExecuteRequest, type NestedToolCall, type RuntimeResponse, type SessionLimits, type WaitOutcome } from "./protocol.ts";

export interface CodeModeCallbacks {
  /** Runs one nested tool call; an error rejects the script's promise with its message. */
  invokeTool(call: Omit<NestedToolCall, "session_id">, signal: AbortSignal): Promise<Result<unknown>>;
  notify?(n: { call_id: string; cell_id: string; text: string }): void;
  /** The cell's final result was handed out and its id is gone (after its tool calls were settled or cancelled). */
  cellClosed?(cellId: string): void;
}

export interface CodeModeSession {
  /** Starts a cell and resolves with its first yield, result or termination; `signal` terminates it. */
  execute(req: ExecuteRequest, signal?: AbortSignal): Promise<Result<RuntimeResponse>>;
  wait(cellId: string, yieldTimeMs: number): Promise<Result<WaitOutcome>>;
  terminate(cellId: string): Promise<Result<WaitOutcome>>;
  shutdown(): Promise<void>;
}

export interface CodeModeProvider {
  readonly kind: "in-process" | "host";
  openSession(callbacks: CodeModeCallbacks, limits?: SessionLimits): Promise<Result<CodeModeSession>>;
  close(): Promise<void>;
}

// ---- in-process -------------------------------------------------------------------------------

export class InProcessProvider implements CodeModeProvider {
  readonly kind = "in-process";
  private engine: Promise<CodeModeEngine> | undefined;
  private readonly sessions = new Set<EngineSession>();

  async openSession(callbacks: CodeModeCallbacks, limits?: SessionLimits): Promise<Result<CodeModeSession>> {
    this.engine ??= CodeModeEngine.load();
    const s = (await this.engine).openSession(
      {
        invokeTool: (call, signal) => callbacks.invokeTool(call, signal),
        async notify(n) {
          callbacks.notify?.(n);
        },
        cellClosed: (cellId) => callbacks.cellClosed?.(cellId),
      },
      limits,
    );
    this.sessions.add(s);
    return ok({
      async execute(req, signal) {
        // The script starts at once, as it does inside the host's execute handler.
        const r = s.execute(req, { schedule: (start) => start() });
        if ("error" in r) return r;
        return ok(await untilAborted(r.ok.initial, signal, () => void s.terminate(r.ok.cell_id)));
      },
      wait: (cellId, ms) => s.wait(cellId, ms),
      terminate: (cellId) => s.terminate(cellId),
      shutdown: async () => {
        s.shutdown();
        this.sessions.delete(s);
      },
    });
  }

  /** Whether the engine's VM housekeeping is done (benchmarks wait for it between blocks). */
  async vmsSettled(): Promise<boolean> {
    return this.engine ? (await this.engine).vmCounts.settled : true;
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.shutdown();
    this.sessions.clear();
    if (this.engine) (await this.engine).dropIdleVms();
  }
}

/** Runs `onAbort` once if `signal` fires before `p` settles; the caller still gets `p`'s value. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return p.finally(() => signal.removeEventListener("abort", onAbort));
}

// ---- host discovery ---------------------------------------------------------------------------

export const HOST_PATH_ENV = "RELAY_CODE_MODE_HOST_PATH";
export const HOST_BINARY_NAME = process.platform === "win32" ? "relay-code-mode-host.exe" : "relay-code-mode-host";

export type HostProgram = { kind: "path"; path: string; source: "env" | "sibling" | "path" } | { kind: "self" };

/**
 * RELAY_CODE_MODE_HOST_PATH, else `relay-code-mode-host` next to the executable, else one on
 * PATH, else this binary's own `code-mode-host` subcommand.
 */
export function resolveHostProgram(env: NodeJS.ProcessEnv = process.env, execPath = process.execPath): HostProgram {
  const override = env[HOST_PATH_ENV];
  if (override) return { kind: "path", path: override, source: "env" };
  const sibling = path.join(path.dirname(execPath), HOST_BINARY_NAME);
  if (isExecutableFile(sibling)) return { kind: "path", path: sibling, source: "sibling" };
  const onPath = findOnPath(HOST_BINARY_NAME, env.PATH, { exts: [""] });
  return onPath ? { kind: "path", path: onPath, source: "path" } : { kind: "self" };
}

function spawnHost(program: HostProgram): Result<ChildPeer> {
  const opts = { name: "code-mode-host" };
  return program.kind === "path" ? spawnPeer([program.path], opts) : spawnSelf("code-mode-host", [], opts);
}

// ---- one host process --------------------------------------------------------------------------

type Waiter = (r: Result<RuntimeResponse>) => void;

class HostConnection {
  readonly sessions = new Map<number, CodeModeCallbacks>();
  private readonly waiters = new Map<string, Waiter>();
  private readonly early = new Map<string, Result<RuntimeResponse>>();
  deadReason: string | undefined;
  controlDir: string | undefined;
  readonly ready: Promise<Result<null>>;

  constructor(readonly child: ChildPeer) {
    const peer = child.peer;
    peer.handle(CodeModeMethods.invokeTool, async (call, ctx) => {
      const cb = this.sessions.get(call.session_id);
      if (!cb) return err(CodeModeErrorCode.UnknownSession, `code-mode session ${call.session_id} is not open on this client`);
      const { session_id: _drop, ...rest } = call;
      const r = await cb.invokeTool(rest, ctx.signal);
      if ("error" in r) return r;
      return ok({ result: r.ok });
    });
    peer.handle(CodeModeMethods.notify, (n) => {
      this.sessions.get(n.session_id)?.notify?.({ call_id: n.call_id, cell_id: n.cell_id, text: n.text });
      return ok({ delivered: true as const });
    });
    peer.onNotification(CodeModeNotifications.cellClosed, (n) => this.sessions.get(n.session_id)?.cellClosed?.(n.cell_id));
    peer.onNotification(CodeModeNotifications.initialResponse, (n) => {
      const key = `${n.session_id}:${n.cell_id}`;
      const w = this.waiters.get(key);
      if (w) {
        this.waiters.delete(key);
        w(n.response);
      } else {
        this.early.set(key, n.response);
      }
    });
    void peer.closed.then((reason) => {
      this.deadReason = reason;
      const e = err(CodeModeErrorCode.HostDied, `the code-mode host died (${reason}); stored values and running cells were lost, a fresh exec starts a new host`);
      for (const w of this.waiters.values()) w(e);
      this.waiters.clear();
    });
    this.ready = peer.call(CodeModeMethods.hello, {}, { timeoutMs: 30_000 }).then((r) => {
      if ("error" in r) return r;
      this.controlDir = r.ok.control_dir;
      return ok(null);
    });
    // A killed host cannot remove its control directory; ours to do when it is a local one.
    void child.exited.then(() => {
      const dir = this.controlDir;
      if (dir && path.dirname(dir) === os.tmpdir() && path.basename(dir).startsWith("relay-code-mode-")) rmSync(dir, { recursive: true, force: true });
    });
  }

  /** Asks a possibly CPU-bound cell to stop before the terminate request can be read. */
  signalTerminate(sessionId: number, cellId: string): void {
    if (!this.controlDir || !/^[0-9]+$/.test(cellId)) return;
    try {
      writeFileSync(path.join(this.controlDir, `${sessionId}-${cellId}`), "");
    } catch {
      // A remote host's directory is not ours to write: the request still arrives in band.
    }
  }

  /** Resolves once the host has warmed its JIT (pre-spawned pool hosts wait for this). */
  async warm(rounds = 30): Promise<Result<null>> {
    const peer = this.child.peer;
    const hello = await peer.call(CodeModeMethods.hello, { await_warmup: true }, { timeoutMs: 60_000 });
    if ("error" in hello) return hello;
    // Then exercise the real request path (schemas, framing, handlers) on both sides.
    const s = await peer.call(CodeModeMethods.createSession, {});
    if ("error" in s) return s;
    const id = s.ok.session_id;
    this.sessions.set(id, { invokeTool: async () => ok(null) });
    for (let i = 0; i < rounds; i++) {
      const started = await peer.call(CodeModeMethods.execute, { session_id: id, request: { tool_call_id: "warmup", source: "text('ok')" } });
      if ("error" in started) return started;
      if (started.ok.initial) continue;
      const r = await this.initialResponse(id, started.ok.cell_id);
      if ("error" in r) return r;
    }
    this.sessions.delete(id);
    const shut = await peer.call(CodeModeMethods.shutdownSession, { session_id: id });
    return "error" in shut ? shut : ok(null);
  }

  get alive(): boolean {
    return this.deadReason === undefined && !this.child.peer.isClosed;
  }

  initialResponse(sessionId: number, cellId: string): Promise<Result<RuntimeResponse>> {
    const key = `${sessionId}:${cellId}`;
    const early = this.early.get(key);
    if (early) {
      this.early.delete(key);
      return Promise.resolve(early);
    }
    if (!this.alive) return Promise.resolve(err(CodeModeErrorCode.HostDied, `the code-mode host died (${this.deadReason ?? "closed"})`));
    return new Promise((resolve) => this.waiters.set(key, resolve));
  }

  hostError<T>(r: Result<T>): Result<T> {
    if ("error" in r && r.error.code === "peer_closed") {
      return err(CodeModeErrorCode.HostDied, `the code-mode host died: ${r.error.message}; stored values and running cells were lost, a fresh exec starts a new host`);
    }
    return r;
  }
}

export interface HostProviderOptions {
  program?: HostProgram;
  /** Keep this many spare hosts started in advance (0: spawn on demand). */
  pool?: number;
}

export class HostProvider implements CodeModeProvider {
  readonly kind = "host";
  private current: HostConnection | undefined;
  private spares: HostConnection[] = [];
  private readonly all = new Set<HostConnection>();
  private readonly program: HostProgram;
  private readonly poolSize: number;

  constructor(o: HostProviderOptions = {}) {
    this.program = o.program ?? resolveHostProgram();
    this.poolSize = o.pool ?? 0;
  }

  /** The live host's pid (for tests that kill it). */
  get hostPid(): number | undefined {
    return this.current?.alive ? this.current.child.pid : undefined;
  }

  /** Starts spare hosts up to the pool size; resolves when they are ready. */
  async prewarm(): Promise<void> {
    while (this.spares.length < this.poolSize) {
      const c = this.start();
      if ("error" in c) return;
      this.spares.push(c.ok);
    }
    await Promise.all(this.spares.map((s) => s.warm()));
  }

  /** Whether the live host's VM housekeeping is done (benchmarks wait for it between blocks). */
  async vmsSettled(): Promise<boolean> {
    const c = this.current;
    if (!c?.alive) return true;
    const r = await c.child.peer.call(CodeModeMethods.hello, {});
    return "error" in r || (r.ok.vms?.settled ?? true);
  }

  /** Starts (or reuses) the current host and waits until it has warmed up. */
  async ensureWarm(): Promise<Result<null>> {
    const c = await this.connection();
    if ("error" in c) return c;
    return c.ok.warm();
  }

  /** Stops the current host; the next session uses a spare or a new host. */
  async retire(): Promise<void> {
    const c = this.current;
    this.current = undefined;
    if (c) {
      this.all.delete(c);
      await c.child.shutdown();
    }
  }

  private start(): Result<HostConnection> {
    const child = spawnHost(this.program);
    if ("error" in child) return child;
    const conn = new HostConnection(child.ok);
    this.all.add(conn);
    return ok(conn);
  }

  private connecting: Promise<Result<HostConnection>> | undefined;

  /** The live host, starting one (or taking a spare) when there is none; concurrent callers share it. */
  private connection(): Promise<Result<HostConnection>> {
    if (this.current?.alive) return Promise.resolve(ok(this.current));
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<Result<HostConnection>> {
    let conn: HostConnection | undefined;
    while (this.spares.length && !conn) {
      const s = this.spares.shift()!;
      if (s.alive) conn = s;
    }
    if (!conn) {
      const started = this.start();
      if ("error" in started) return err(CodeModeErrorCode.HostDied, `could not start the code-mode host: ${started.error.message}`);
      conn = started.ok;
    }
    this.current = conn;
    // Replace the spare a little later, so its start does not compete with this first command.
    if (this.poolSize > 0) setTimeout(() => void this.prewarm(), 200).unref?.();
    const ready = await conn.ready;
    if ("error" in ready) return err(CodeModeErrorCode.HostDied, `the code-mode host did not start: ${ready.error.message}`);
    return ok(conn);
  }

  async openSession(callbacks: CodeModeCallbacks, limits?: SessionLimits): Promise<Result<CodeModeSession>> {
    const c = await this.connection();
    if ("error" in c) return c;
    const conn = c.ok;
    const peer = conn.child.peer;
    const created = conn.hostError(await peer.call(CodeModeMethods.createSession, { limits }));
    if ("error" in created) return created;
    const id = created.ok.session_id;
    // Cells between ExecutionStarted and cell_closed (whichever is seen first), so that shutdown
    // can also stop CPU-bound ones.
    const cells = new Map<string, "open" | "closed">();
    conn.sessions.set(id, {
      ...callbacks,
      cellClosed(cellId) {
        if (cells.get(cellId) === "open") cells.delete(cellId);
        else cells.set(cellId, "closed");
        callbacks.cellClosed?.(cellId);
      },
    });
    let closed = false;
    const session: CodeModeSession = {
      async execute(req, signal) {
        if (!conn.alive) return err(CodeModeErrorCode.HostDied, `the code-mode host died (${conn.deadReason ?? "closed"}); open a new session`);
        const started = conn.hostError(await peer.call(CodeModeMethods.execute, { session_id: id, request: req }));
        if ("error" in started) return started;
        const cellId = started.ok.cell_id;
        if (started.ok.closed) callbacks.cellClosed?.(cellId);
        else if (cells.get(cellId) === "closed") cells.delete(cellId);
        else cells.set(cellId, "open");
        // A script that ended or yielded at once came back with the answer.
        const initial = started.ok.initial ? Promise.resolve(ok(started.ok.initial)) : conn.initialResponse(id, cellId);
        return untilAborted(initial, signal, () => void session.terminate(cellId));
      },
      async wait(cellId, ms) {
        const r = conn.hostError(await peer.call(CodeModeMethods.wait, { session_id: id, request: { cell_id: cellId, yield_time_ms: ms } }));
        return "error" in r ? r : ok(r.ok.outcome);
      },
      async terminate(cellId) {
        conn.signalTerminate(id, cellId);
        const r = conn.hostError(await peer.call(CodeModeMethods.terminate, { session_id: id, cell_id: cellId }));
        return "error" in r ? r : ok(r.ok.outcome);
      },
      async shutdown() {
        if (closed) return;
        closed = true;
        for (const [cellId, state] of cells) if (state === "open") conn.signalTerminate(id, cellId);
        if (conn.alive) await peer.call(CodeModeMethods.shutdownSession, { session_id: id }, { timeoutMs: 5_000 });
        conn.sessions.delete(id);
      },
    };
    return ok(session);
  }

  async close(): Promise<void> {
    const conns = [...this.all];
    this.all.clear();
    this.spares = [];
    this.current = undefined;
    await Promise.all(conns.map((c) => c.child.shutdown()));
  }
}
