/**
 * What a cell needs from outside it: from its owner (`EngineDelegate`: nested tool calls,
 * notifications, the busy and long-entry hooks), from the engine (`CellHost`: VMs and the heap
 * guard), and the session's `Limits`.
 */

import type { NestedToolCall } from "../../contracts/code-mode.ts";
import type { Result } from "../../util/result.ts";
import type { HeapGuard } from "../heap-guard.ts";
import type { PreparedVm } from "../vm.ts";

/** What a session needs from its owner: nested tool calls and notifications. */
export interface EngineDelegate {
  invokeTool(call: Omit<NestedToolCall, "session_id">, signal: AbortSignal): Promise<Result<unknown>>;
  notify(n: { call_id: string; cell_id: string; text: string }, signal: AbortSignal): Promise<void>;
  cellClosed?(cellId: string): void;
  /**
   * Called every BUSY_POLL_MS while a cell has been inside the VM for longer than that: the
   * terminate request cannot be read while a CPU-bound script holds the thread, so the host
   * checks for an out-of-band one here. True stops the cell as terminated.
   */
  whileBusy?(cellId: string): boolean;
  /**
   * Called on every interrupt check once a VM entry has lasted LONG_ENTRY_MS: the host writes the
   * frames it held back to send together (ExecutionStarted, notifications, delegate requests),
   * so a busy script cannot delay them.
   */
  longEntry?(): void;
}

export interface Limits {
  memoryLimitBytes: number;
  cpuLimitMs: number;
}

/** Something the VM holds a handle for, freed with the VM. */
export type Disposable = { alive: boolean; dispose(): void };

/** What a cell needs from the engine. */
export interface CellHost {
  /** A prepared VM (throws when none can be allocated). */
  takeVm(): PreparedVm;
  /** Frees `vm` and `handles` later, off the response path. */
  releaseVm(vm: PreparedVm, handles: Disposable[]): void;
  /** Frees `vm` and `handles` now. */
  freeVm(vm: PreparedVm, handles: Disposable[]): void;
  /** A host exception unwound the VM: new cells must use a fresh wasm module. */
  poisoned(): void;
  /** Decides the wasm heap's growth; charged with the running cell (heap-guard.ts). */
  readonly heap?: HeapGuard;
}
