/**
 * Server side of `relay code-mode-host`: maps the `codemode/...` methods onto engine sessions
 * and turns nested tool calls and notifications into host -> client requests.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setImmediate } from "node:timers";
import type { z } from "zod";
import { ErrorCode } from "../protocol/envelope.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, ok } from "../util/result.ts";
import { CodeModeEngine, type EngineSession } from "./engine.ts";
import { CodeModeErrorCode, CodeModeMethods, CodeModeNotifications, type RuntimeResponse } from "./protocol.ts";

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

/** Registers every code-mode method on `peer`; returns a function that shuts all sessions down. */
export function serveCodeMode(peer: RpcPeer, engine: CodeModeEngine): () => void {
  const sessions = new Map<number, EngineSession>();
  let nextSession = 1;

  // Terminate requests cannot be read while a CPU-bound cell holds the thread; the client also
  // drops a marker file here, which running cells poll from the interrupt handler.
  let controlDir: string | undefined;
  try {
    controlDir = mkdtempSync(path.join(os.tmpdir(), "relay-code-mode-"));
  } catch {
    controlDir = undefined;
  }
  const marker = (session: number, cell: string) => (controlDir ? path.join(controlDir, `${session}-${cell}`) : undefined);
  // Only hosts started ahead of use (a pool) warm up: for a host started by an exec call, the
  // throwaway cells would compete with that very call.
  let warm = false;
  let warming: Promise<void> | undefined;
  peer.handle(CodeModeMethods.hello, async (p) => {
    if (p.await_warmup) {
      warming ??= warmUp(engine).then(() => {
        warm = true;
      });
      await warming;
    }
    return ok({ pid: process.pid, sessions: sessions.size, warm, control_dir: controlDir, vms: engine.vmCounts });
  });

  // While an execute handler runs its script: sends the ExecutionStarted answer early. One at a
  // time (the script runs synchronously inside the handler).
  let answerStarted: (() => void) | undefined;
  // Cells whose execute answer said `closed`: their cell_closed notification is not sent.
  const closedInAnswer = new Set<string>();

  peer.handle(CodeModeMethods.createSession, (p) => {
    const id = nextSession++;
    const session = engine.openSession(
      {
        async invokeTool(call, signal) {
          answerStarted?.();
          const r = await peer.call(CodeModeMethods.invokeTool, { ...call, session_id: id }, { signal });
          if ("error" in r) return r;
          return ok(r.ok.result);
        },
        async notify(n, signal) {
          answerStarted?.();
          await peer.call(CodeModeMethods.notify, { ...n, session_id: id }, { signal });
        },
        cellClosed(cellId) {
          if (closedInAnswer.delete(`${id}:${cellId}`)) return;
          // A cell closes after its initial_response went out (that is written the moment the
          // engine decides it). cell_closed also follows any other answer carrying the result:
          // corked, it joins the chunk being built after them; else it waits a turn for a
          // response being written (a terminate's).
          const closed = () => void peer.notify(CodeModeNotifications.cellClosed, { session_id: id, cell_id: cellId });
          if (peer.corked) closed();
          else setImmediate(closed);
        },
        longEntry: () => {
          answerStarted?.();
          peer.flush();
        },
        whileBusy(cellId) {
          const m = marker(id, cellId);
          return m !== undefined && existsSync(m);
        },
      },
      p.limits,
    );
    sessions.set(id, session);
    return ok({ session_id: id });
  });

  peer.handle(CodeModeMethods.execute, (p, ctx) => {
    const session = sessions.get(p.session_id);
    if (!session) return unknownSession(p.session_id);
    const answer: z.input<typeof CodeModeMethods.execute.result> = { cell_id: "", execute_id: ctx.requestId };
    let answered = false;
    const answerNow = () => {
      if (answered) return;
      answered = true;
      ctx.respond(ok(answer));
    };
    const notifyInitial = (response: RuntimeResponse) => {
      const base = { id: ctx.requestId, session_id: p.session_id, cell_id: answer.cell_id };
      const r = peer.notify(CodeModeNotifications.initialResponse, { ...base, response: ok(response) });
      // Never leave the client waiting: an unsendable response (e.g. over the frame limit) becomes an error.
      if ("error" in r && r.error.code !== ErrorCode.PeerClosed) {
        peer.notify(CodeModeNotifications.initialResponse, { ...base, response: err(CodeModeErrorCode.Runtime, `the cell's first response could not be sent: ${r.error.message}`) });
      }
    };
    // The script runs inside this handler, corked. One that ends or yields at once is answered in
    // a single frame; before anything else it sends (a tool call, a notification), and once it has
    // run for a millisecond, the plain ExecutionStarted answer goes out first.
    const started = session.execute(p.request, {
      schedule: (start, cellId) => {
        answer.cell_id = cellId;
        answerStarted = answerNow;
        peer.cork();
        try {
          start();
        } finally {
          answerStarted = undefined;
          peer.uncork();
        }
      },
      onInitial: (response) => {
        if (answered) return notifyInitial(response);
        answer.initial = response;
        // Nothing was sent for the cell (that would have answered first), so no notification is
        // pending: a final response means the cell closes right after.
        if (!("Yielded" in response)) {
          answer.closed = true;
          closedInAnswer.add(`${p.session_id}:${answer.cell_id}`);
        }
      },
    });
    if ("error" in started) return started;
    answered = true; // what follows is an initial_response notification
    return ok(answer);
  });

  peer.handle(CodeModeMethods.wait, async (p) => {
    const session = sessions.get(p.session_id);
    if (!session) return unknownSession(p.session_id);
    const r = await session.wait(p.request.cell_id, p.request.yield_time_ms);
    if ("error" in r) return r;
    return ok({ outcome: r.ok });
  });

  peer.handle(CodeModeMethods.terminate, async (p) => {
    const session = sessions.get(p.session_id);
    if (!session) return unknownSession(p.session_id);
    const r = await session.terminate(p.cell_id);
    // The client drops a marker before every terminate request; the request is where it is
    // cleared (not per cell: an unlink per command is a syscall on the hot path).
    const m = marker(p.session_id, p.cell_id);
    if (m) rmSync(m, { force: true });
    if ("error" in r) return r;
    return ok({ outcome: r.ok });
  });

  peer.handle(CodeModeMethods.shutdownSession, (p) => {
    sessions.get(p.session_id)?.shutdown();
    sessions.delete(p.session_id);
    // Markers the client dropped for the session's open cells before asking for the shutdown.
    if (controlDir) {
      try {
        for (const f of readdirSync(controlDir)) if (f.startsWith(`${p.session_id}-`)) rmSync(path.join(controlDir, f), { force: true });
      } catch {
        // The directory is gone: nothing to clear.
      }
    }
    return ok({ shutdown: true as const });
  });

  return () => {
    for (const s of sessions.values()) s.shutdown();
    sessions.clear();
    if (controlDir) rmSync(controlDir, { recursive: true, force: true });
  };
}
