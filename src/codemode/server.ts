/**
 * Server side of `relay code-mode-host`: maps the `codemode/...` methods onto engine sessions
 * and turns nested tool calls and notifications into host -> client requests.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setImmediate } from "node:timers";
import type { z } from "zod";
import {
  CodeModeErrorCode,
  CodeModeMethods,
  CodeModeNotifications,
  type RuntimeResponse,
  type SessionLimits,
} from "../contracts/code-mode.ts";
import { ErrorCode, type RequestId } from "../contracts/envelope.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, ok, type Result } from "../util/result.ts";
import type { CodeModeEngine, EngineDelegate, EngineSession } from "./engine.ts";

export function unknownSession(id: number) {
  return err(CodeModeErrorCode.UnknownSession, `unknown code-mode session ${id}`);
}

/**
 * Runs throwaway cells (yielding between batches) so the JIT has compiled the engine's hot
 * paths before real commands arrive: a cold cell costs about twice a warm one.
 */
export async function warmUp(engine: CodeModeEngine, cells = 400): Promise<void> {
  const session = engine.openSession({ invokeTool: async () => ok(null), notify: async () => {} });
  for (let i = 0; i < cells; i++) {
    if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    // Started at once, as the execute handler starts scripts, so the path it serves is the one warmed.
    const r = session.execute({ tool_call_id: "warmup", source: "text('ok')" }, { schedule: (start) => start() });
    if ("error" in r) break;
    await r.ok.initial;
  }
  session.shutdown();
}

/**
 * Registers every code-mode method on `peer` at once, so every request finds its handler, while
 * QuickJS may still be loading: requests that arrive before it has are served once it has, in
 * the order they came. Returns a function that shuts all sessions down.
 */
export function serveCodeMode(peer: RpcPeer, loading: Promise<CodeModeEngine>): () => void {
  let server: CodeModeServer | undefined;
  let closed = false;
  const ready = loading.then((engine) => {
    server = new CodeModeServer(peer, engine);
    if (closed) server.close();
    return server;
  });
  const when =
    <P, C, R>(fn: (s: CodeModeServer, p: P, ctx: C) => R) =>
    (p: P, ctx: C): R | Promise<Awaited<R>> =>
      // then() flattens what an async method returns; TypeScript cannot see that for a generic R.
      server ? fn(server, p, ctx) : (ready.then((s) => fn(s, p, ctx)) as Promise<Awaited<R>>);
  peer.handle(
    CodeModeMethods.hello,
    when((s, p) => s.hello(p.await_warmup ?? false)),
  );
  peer.handle(
    CodeModeMethods.createSession,
    when((s, p) => s.createSession(p.limits)),
  );
  peer.handle(
    CodeModeMethods.execute,
    when((s, p, ctx) => s.execute(p, ctx)),
  );
  peer.handle(
    CodeModeMethods.wait,
    when((s, p) => s.wait(p.session_id, p.request.cell_id, p.request.yield_time_ms)),
  );
  peer.handle(
    CodeModeMethods.terminate,
    when((s, p) => s.terminate(p.session_id, p.cell_id)),
  );
  peer.handle(
    CodeModeMethods.shutdownSession,
    when((s, p) => s.shutdownSession(p.session_id)),
  );
  return () => {
    closed = true;
    server?.close();
  };
}

type ExecuteParams = z.output<typeof CodeModeMethods.execute.params>;
type ExecuteAnswer = z.input<typeof CodeModeMethods.execute.result>;

/** The host's state: its sessions, the control directory, and the execute answer in progress. */
class CodeModeServer {
  readonly sessions = new Map<number, EngineSession>();
  private nextSession = 1;
  /**
   * Terminate requests cannot be read while a CPU-bound cell holds the thread; the client also
   * drops a marker file here, which running cells poll from the interrupt handler.
   */
  private readonly controlDir: string | undefined;
  /**
   * Only hosts started ahead of use (a pool) warm up: for a host started by an exec call, the
   * throwaway cells would compete with that very call.
   */
  private warm = false;
  private warming: Promise<void> | undefined;
  /** While an execute handler runs its script: sends the ExecutionStarted answer early (one at a time). */
  private answerStarted: (() => void) | undefined;
  /** Cells whose execute answer said `closed`: their cell_closed notification is not sent. */
  private readonly closedInAnswer = new Set<string>();

  constructor(
    private readonly peer: RpcPeer,
    private readonly engine: CodeModeEngine,
  ) {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(path.join(os.tmpdir(), "relay-code-mode-"));
    } catch {
      dir = undefined;
    }
    this.controlDir = dir;
  }

  private marker(session: number, cell: string): string | undefined {
    return this.controlDir ? path.join(this.controlDir, `${session}-${cell}`) : undefined;
  }

  async hello(awaitWarmup: boolean) {
    if (awaitWarmup) {
      this.warming ??= warmUp(this.engine).then(() => {
        this.warm = true;
      });
      await this.warming;
    }
    return ok({
      pid: process.pid,
      sessions: this.sessions.size,
      warm: this.warm,
      control_dir: this.controlDir,
      vms: this.engine.vmCounts,
    });
  }

  async wait(sessionId: number, cellId: string, yieldTimeMs: number) {
    const session = this.sessions.get(sessionId);
    if (!session) return unknownSession(sessionId);
    const r = await session.wait(cellId, yieldTimeMs);
    return "error" in r ? r : ok({ outcome: r.ok });
  }

  createSession(limits: SessionLimits | undefined) {
    const id = this.nextSession++;
    this.sessions.set(id, this.engine.openSession(this.delegateFor(id), limits));
    return ok({ session_id: id });
  }

  /** What session `id`'s cells ask of the client: tool calls, notifications, closes, terminate markers. */
  private delegateFor(id: number): EngineDelegate {
    const peer = this.peer;
    return {
      invokeTool: async (call, signal) => {
        this.answerStarted?.();
        const r = await peer.call(CodeModeMethods.invokeTool, { ...call, session_id: id }, { signal });
        if ("error" in r) return r;
        return ok(r.ok.result);
      },
      notify: async (n, signal) => {
        this.answerStarted?.();
        await peer.call(CodeModeMethods.notify, { ...n, session_id: id }, { signal });
      },
      cellClosed: (cellId) => {
        if (this.closedInAnswer.delete(`${id}:${cellId}`)) return;
        // A cell closes after its initial_response went out (that is written the moment the
        // engine decides it). cell_closed also follows any other answer carrying the result:
        // corked, it joins the chunk being built after them; else it waits a turn for a
        // response being written (a terminate's).
        const closed = () => void peer.notify(CodeModeNotifications.cellClosed, { session_id: id, cell_id: cellId });
        if (peer.corked) closed();
        else setImmediate(closed);
      },
      longEntry: () => {
        this.answerStarted?.();
        peer.flush();
      },
      whileBusy: (cellId) => {
        const m = this.marker(id, cellId);
        return m !== undefined && existsSync(m);
      },
    };
  }

  /**
   * The script runs inside this handler, corked. One that ends or yields at once is answered in
   * a single frame; before anything else it sends (a tool call, a notification), and once it has
   * run for a millisecond, the plain ExecutionStarted answer goes out first.
   */
  execute(p: ExecuteParams, ctx: { requestId: RequestId; respond(r: Result<ExecuteAnswer>): void }) {
    const session = this.sessions.get(p.session_id);
    if (!session) return unknownSession(p.session_id);
    const answer: ExecuteAnswer = { cell_id: "", execute_id: ctx.requestId };
    let answered = false;
    const answerNow = () => {
      if (answered) return;
      answered = true;
      ctx.respond(ok(answer));
    };
    const started = session.execute(p.request, {
      schedule: (start, cellId) => {
        answer.cell_id = cellId;
        this.answerStarted = answerNow;
        this.peer.cork();
        try {
          start();
        } finally {
          this.answerStarted = undefined;
          this.peer.uncork();
        }
      },
      onInitial: (response) => {
        if (answered) return this.notifyInitial(ctx.requestId, p.session_id, answer.cell_id, response);
        answer.initial = response;
        // Nothing was sent for the cell (that would have answered first), so no notification is
        // pending: a final response means the cell closes right after.
        if (!("Yielded" in response)) {
          answer.closed = true;
          this.closedInAnswer.add(`${p.session_id}:${answer.cell_id}`);
        }
      },
    });
    if ("error" in started) return started;
    answered = true; // what follows is an initial_response notification
    return ok(answer);
  }

  /** A cell's first response after its execute answer; never leaves the client waiting. */
  private notifyInitial(id: RequestId, sessionId: number, cellId: string, response: RuntimeResponse): void {
    const base = { id, session_id: sessionId, cell_id: cellId };
    const r = this.peer.notify(CodeModeNotifications.initialResponse, { ...base, response: ok(response) });
    // An unsendable response (e.g. over the frame limit) becomes an error.
    if ("error" in r && r.error.code !== ErrorCode.PeerClosed) {
      this.peer.notify(CodeModeNotifications.initialResponse, {
        ...base,
        response: err(CodeModeErrorCode.Runtime, `the cell's first response could not be sent: ${r.error.message}`),
      });
    }
  }

  async terminate(sessionId: number, cellId: string) {
    const session = this.sessions.get(sessionId);
    if (!session) return unknownSession(sessionId);
    const r = await session.terminate(cellId);
    // The client drops a marker before every terminate request; the request is where it is
    // cleared (not per cell: an unlink per command is a syscall on the hot path).
    const m = this.marker(sessionId, cellId);
    if (m) rmSync(m, { force: true });
    return "error" in r ? r : ok({ outcome: r.ok });
  }

  shutdownSession(sessionId: number) {
    this.sessions.get(sessionId)?.shutdown();
    this.sessions.delete(sessionId);
    // Markers the client dropped for the session's open cells before asking for the shutdown.
    if (this.controlDir) {
      try {
        for (const f of readdirSync(this.controlDir))
          if (f.startsWith(`${sessionId}-`)) rmSync(path.join(this.controlDir, f), { force: true });
      } catch {
        // The directory is gone: nothing to clear.
      }
    }
    return ok({ shutdown: true as const });
  }

  close(): void {
    for (const s of this.sessions.values()) s.shutdown();
    this.sessions.clear();
    if (this.controlDir) rmSync(this.controlDir, { recursive: true, force: true });
  }
}
