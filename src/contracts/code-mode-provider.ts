/**
 * What a code-mode provider is: `CodeModeProvider` opens `CodeModeSession`s that answer their
 * nested tool calls through `CodeModeCallbacks`. The providers are in-process-provider.ts (the
 * engine without IPC) and host/provider.ts (a `code-mode-host` process). `untilAborted` is how
 * both terminate a cell whose caller gave up.
 */

import type { Result } from "../util/result.ts";
import type { ExecuteRequest, NestedToolCall, RuntimeResponse, SessionLimits, WaitOutcome } from "./code-mode.ts";

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

/** Runs `onAbort` once if `signal` fires before `p` settles; the caller still gets `p`'s value. */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return p.finally(() => signal.removeEventListener("abort", onAbort));
}
