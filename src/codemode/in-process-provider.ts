/** `InProcessProvider`: code-mode sessions on an engine in this process, without IPC. */

import type { SessionLimits } from "../contracts/code-mode.ts";
import {
  type CodeModeCallbacks,
  type CodeModeProvider,
  type CodeModeSession,
  untilAborted,
} from "../contracts/code-mode-provider.ts";
import { ok, type Result } from "../util/result.ts";
import { CodeModeEngine, type EngineSession } from "./engine.ts";

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
