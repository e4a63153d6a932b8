/**
 * One code-mode session on a host connection: its requests (execute, wait, terminate,
 * shutdown), and the cells it has open, so that shutdown can also stop CPU-bound ones.
 */

import { CodeModeErrorCode, CodeModeMethods } from "../../contracts/code-mode.ts";
import { type CodeModeCallbacks, type CodeModeSession, untilAborted } from "../../contracts/code-mode-provider.ts";
import { err, ok } from "../../util/result.ts";
import type { HostConnection } from "./connection.ts";

/** Registers session `id` on `conn` with `callbacks` and returns its client side. */
export function hostSession(conn: HostConnection, id: number, callbacks: CodeModeCallbacks): CodeModeSession {
  const peer = conn.child.peer;
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
      if (!conn.alive)
        return err(
          CodeModeErrorCode.HostDied,
          `the code-mode host died (${conn.deadReason ?? "closed"}); open a new session`,
        );
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
      const r = conn.hostError(
        await peer.call(CodeModeMethods.wait, { session_id: id, request: { cell_id: cellId, yield_time_ms: ms } }),
      );
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
  return session;
}
