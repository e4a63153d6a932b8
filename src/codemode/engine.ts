/**
 * The QuickJS code-mode runtime: sessions of cells, each cell a fresh QuickJS runtime+context
 * with its own memory limit and CPU budget. Used in-process (tests, bench baseline) and by
 * `relay code-mode-host`. Async host calls use the sync variant: host functions return
 * promises from `ctx.newPromise()` and the engine pumps `rt.executePendingJobs()`.
 */
import { setImmediate } from "node:timers";
import wasmFileVariant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import {
  CodeModeErrorCode,
  DEFAULT_EXEC_YIELD_TIME_MS,
  type ExecuteRequest,
  missingCell,
  type RuntimeResponse,
  type SessionLimits,
  type WaitOutcome,
} from "../contracts/code-mode.ts";
import { compileEmbeddedWasm, QUICKJS_WASM_ASSET } from "../util/embedded-file.ts";
import { err, ok, type Result } from "../util/result.ts";
import { Cell } from "./cell/cell.ts";
import type { CellHost, EngineDelegate, Limits } from "./cell/contract.ts";
import { HeapGuard } from "./heap-guard.ts";
import { StoredValues } from "./stored.ts";
import { PreparedVm } from "./vm.ts";
import { VmPool } from "./vm-pool.ts";

export type { EngineDelegate } from "./cell/contract.ts";

export const DEFAULT_MEMORY_LIMIT_BYTES = 64 * 1024 * 1024;
export const DEFAULT_CPU_LIMIT_MS = 10_000;

let modulePromise: Promise<QuickJSWASMModule> | undefined;

/**
 * The sync variant, instantiated from the wasm the binary carries where it carries one (a
 * compiled relay; main.ts starts compiling it for a code-mode host), else from the .wasm file
 * the variant ships in node_modules.
 */
function quickJsVariant(): QuickJSSyncVariant {
  const compiled = compileEmbeddedWasm(QUICKJS_WASM_ASSET);
  return compiled ? newVariant(wasmFileVariant, { wasmModule: () => compiled }) : wasmFileVariant;
}

/** Loads the QuickJS wasm module once per process. */
export function loadQuickJS(): Promise<QuickJSWASMModule> {
  modulePromise ??= newQuickJSWASMModuleFromVariant(quickJsVariant());
  return modulePromise;
}

export class CodeModeEngine implements CellHost {
  private replacing = false;
  /** How many times a broken wasm module was replaced. */
  replacements = 0;
  private readonly vms = new VmPool(
    () => PreparedVm.create(this.qjs, DEFAULT_MEMORY_LIMIT_BYTES),
    (vm) => vm.module === this.qjs,
  );

  /** Open sessions' memory limits, which the heap's ceiling is made of. */
  private sessionLimitBytes = 0;
  heap: HeapGuard;

  private constructor(private qjs: QuickJSWASMModule) {
    this.heap = this.guard(qjs);
  }

  private guard(qjs: QuickJSWASMModule): HeapGuard {
    return new HeapGuard(qjs.getWasmMemory(), () => this.sessionLimitBytes);
  }

  static async load(): Promise<CodeModeEngine> {
    return new CodeModeEngine(await loadQuickJS());
  }

  takeVm(): PreparedVm {
    return this.vms.take();
  }

  releaseVm(vm: PreparedVm, handles: Array<{ alive: boolean; dispose(): void }>): void {
    this.vms.release(vm, handles);
  }

  freeVm(vm: PreparedVm, handles: Array<{ alive: boolean; dispose(): void }>): void {
    vm.dispose(handles);
  }

  /** Prepared and used VMs, and whether housekeeping has nothing left to do. */
  get vmCounts(): { spares: number; used: number; settled: boolean } {
    return { ...this.vms.counts, settled: this.vms.settled };
  }

  /** Frees the prepared and used VMs now (an in-process provider closing). */
  dropIdleVms(): void {
    this.vms.drain();
  }

  /**
   * A host exception escaped the VM (e.g. the native stack overflowed inside wasm): that module's
   * memory may be inconsistent, so new cells move to a freshly loaded one.
   */
  poisoned(): void {
    if (this.replacing) return;
    this.replacing = true;
    void newQuickJSWASMModuleFromVariant(quickJsVariant()).then(
      (m) => {
        this.qjs = m;
        this.heap = this.guard(m);
        this.replacements++;
        this.replacing = false;
      },
      () => {
        this.replacing = false;
      },
    );
  }

  openSession(delegate: EngineDelegate, limits: SessionLimits = {}): EngineSession {
    const memoryLimitBytes = limits.memory_limit_bytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
    this.sessionLimitBytes += memoryLimitBytes;
    const released = () => (this.sessionLimitBytes -= memoryLimitBytes);
    return new EngineSession(
      this,
      delegate,
      { memoryLimitBytes, cpuLimitMs: limits.cpu_limit_ms ?? DEFAULT_CPU_LIMIT_MS },
      released,
    );
  }
}

export interface ExecuteOptions {
  /**
   * When the script begins (default: the next event-loop turn). The host starts it at once, inside
   * its execute handler, so that a script that ends (or yields) right away is answered in one frame.
   */
  schedule?: (start: () => void, cellId: string) => void;
  /** Hears the first yield, result or termination synchronously, as it is decided. */
  onInitial?: (r: RuntimeResponse) => void;
}

export interface StartedCell {
  cell_id: string;
  /** First yield, result or termination. */
  initial: Promise<RuntimeResponse>;
}

export class EngineSession {
  /** Committed stored values, shared by this session's cells only. */
  private readonly stored = new StoredValues();
  private readonly cells = new Map<string, Cell>();
  /** Cells that closed as Terminated before their terminate request was read (out-of-band). */
  private readonly terminated = new Map<string, RuntimeResponse>();
  private nextCell = 1;
  private closing = false;

  constructor(
    private readonly engine: CodeModeEngine,
    private readonly delegate: EngineDelegate,
    private readonly limits: Limits,
    /** Gives the session's share of the heap back (once). */
    private readonly released: () => void,
  ) {}

  get activeCells(): number {
    return this.cells.size;
  }

  execute(req: ExecuteRequest, opts: ExecuteOptions = {}): Result<StartedCell, "shutting_down" | "busy_observer"> {
    if (this.closing) return err(CodeModeErrorCode.ShuttingDown, "code mode session is shutting down");
    const id = String(this.nextCell++);
    const cell = new Cell(id, this.engine, this.limits, this.delegate, this.stored, req, () => this.onClosed(id));
    this.cells.set(id, cell);
    const initial = cell.observe(req.yield_time_ms ?? DEFAULT_EXEC_YIELD_TIME_MS, opts.onInitial);
    if ("error" in initial) return initial;
    (opts.schedule ?? ((start) => void setImmediate(start)))(() => cell.start(req.source), id);
    return ok({ cell_id: id, initial: initial.ok });
  }

  async wait(cellId: string, yieldTimeMs: number): Promise<Result<WaitOutcome, "busy_observer">> {
    const cell = this.cells.get(cellId);
    if (!cell) return ok(missing(cellId));
    const r = cell.observe(yieldTimeMs);
    if ("error" in r) return r;
    return ok({ LiveCell: await r.ok });
  }

  async terminate(cellId: string): Promise<Result<WaitOutcome, never>> {
    const cell = this.cells.get(cellId);
    const done = this.terminated.get(cellId);
    if (!cell && done) {
      this.terminated.delete(cellId);
      return ok({ LiveCell: done });
    }
    if (!cell) return ok(missing(cellId));
    return ok({ LiveCell: cell.terminate() });
  }

  /** Terminates every cell; new cells are refused afterwards. */
  shutdown(): void {
    if (!this.closing) this.released();
    this.closing = true;
    for (const cell of [...this.cells.values()]) cell.terminate();
  }

  private onClosed(id: string): void {
    const final = this.cells.get(id)?.finalResponse;
    if (final && "Terminated" in final) {
      this.terminated.set(id, final);
      if (this.terminated.size > 16) this.terminated.delete(this.terminated.keys().next().value!);
    }
    this.cells.delete(id);
    this.delegate.cellClosed?.(id);
  }
}

function missing(cellId: string): WaitOutcome {
  return { MissingCell: missingCell(cellId) };
}
