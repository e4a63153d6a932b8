/**
 * One `code-mode-host` process seen from the client: it answers the host's delegate requests
 * (nested tool calls, notifications) through each open session's callbacks, hands out each
 * cell's initial response whether it arrives before or after it is awaited, warms the host up,
 * and turns a dead host into `host_died` errors.
 */
import { rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  CodeModeErrorCode,
  CodeModeMethods,
  CodeModeNotifications,
  type RuntimeResponse,
} from "../../contracts/code-mode.ts";
import type { CodeModeCallbacks } from "../../contracts/code-mode-provider.ts";
import type { ChildPeer } from "../../protocol/child.ts";
import type { RpcPeer } from "../../protocol/peer.ts";
import { err, ok, type Result } from "../../util/result.ts";

type Waiter = (r: Result<RuntimeResponse>) => void;

export class HostConnection {
  readonly sessions = new Map<number, CodeModeCallbacks>();
  private readonly waiters = new Map<string, Waiter>();
  private readonly early = new Map<string, Result<RuntimeResponse>>();
  deadReason: string | undefined;
  controlDir: string | undefined;
  readonly ready: Promise<Result<null>>;

  constructor(readonly child: ChildPeer) {
    const peer = child.peer;
    this.serveDelegates(peer);
    peer.onNotification(CodeModeNotifications.initialResponse, (n) =>
      this.initialResponseArrived(`${n.session_id}:${n.cell_id}`, n.response),
    );
    void peer.closed.then((reason) => {
      this.deadReason = reason;
      const e = err(
        CodeModeErrorCode.HostDied,
        `the code-mode host died (${reason}); stored values and running cells were lost, a fresh exec starts a new host`,
      );
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
      if (dir && path.dirname(dir) === os.tmpdir() && path.basename(dir).startsWith("relay-code-mode-"))
        rmSync(dir, { recursive: true, force: true });
    });
  }

  /** Answers the host's delegate requests and notifications through the sessions' callbacks. */
  private serveDelegates(peer: RpcPeer): void {
    peer.handle(CodeModeMethods.invokeTool, async (call, ctx) => {
      const cb = this.sessions.get(call.session_id);
      if (!cb)
        return err(CodeModeErrorCode.UnknownSession, `code-mode session ${call.session_id} is not open on this client`);
      const { session_id: _drop, ...rest } = call;
      const r = await cb.invokeTool(rest, ctx.signal);
      // The tool's own code travels in `data`: the host only shows the script the message.
      if ("error" in r) return err("tool_failed", r.error.message, { code: r.error.code });
      return ok({ result: r.ok });
    });
    peer.handle(CodeModeMethods.notify, (n) => {
      this.sessions.get(n.session_id)?.notify?.({ call_id: n.call_id, cell_id: n.cell_id, text: n.text });
      return ok({ delivered: true as const });
    });
    peer.onNotification(CodeModeNotifications.cellClosed, (n) =>
      this.sessions.get(n.session_id)?.cellClosed?.(n.cell_id),
    );
  }

  private initialResponseArrived(key: string, response: Result<RuntimeResponse>): void {
    const w = this.waiters.get(key);
    if (w) {
      this.waiters.delete(key);
      w(response);
    } else {
      this.early.set(key, response);
    }
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
      const started = await peer.call(CodeModeMethods.execute, {
        session_id: id,
        request: { tool_call_id: "warmup", source: "text('ok')" },
      });
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
    if (!this.alive)
      return Promise.resolve(
        err(CodeModeErrorCode.HostDied, `the code-mode host died (${this.deadReason ?? "closed"})`),
      );
    return new Promise((resolve) => this.waiters.set(key, resolve));
  }

  hostError<T>(r: Result<T>): Result<T> {
    if ("error" in r && r.error.code === "peer_closed") {
      return err(
        CodeModeErrorCode.HostDied,
        `the code-mode host died: ${r.error.message}; stored values and running cells were lost, a fresh exec starts a new host`,
      );
    }
    return r;
  }
}
