/**
 * A cell's limits while it runs: CPU time over all its VM entries, memory (the heap growth it is
 * charged with, and measurements of its runtime), the first limit it hit (which ends it), and
 * the interrupt check that stops a script on a limit or a terminate. `enter` is the one way into
 * the VM: it keeps the accounting and retires a runtime a host exception unwound.
 */
import type { QuickJSHandle } from "quickjs-emscripten-core";
import type { HeapAccount } from "../heap-guard.ts";
import { describeThrown } from "../thrown.ts";
import type { PreparedVm } from "../vm.ts";
import type { CellHost, EngineDelegate, Limits } from "./contract.ts";

/** How often (and after how long inside the VM) `whileBusy` is called. */
const BUSY_POLL_MS = 20;
/** Least VM time between two measurements of a runtime's memory. */
const MEASURE_EVERY_MS = 25;
/** VM time from which a cell's memory is also measured when it completes. */
const END_MEASURE_MIN_MS = 2;
const LONG_ENTRY_MS = 1;

export class CellBudget {
  private cpuUsedMs = 0;
  private entryStart = 0;
  private inside = false;
  private interruptReason: "cpu" | "terminate" | undefined;
  /** The limit the cell hit (memory, output, calls in flight): it ends with this as its error. */
  private hit: string | undefined;
  readonly account: HeapAccount;
  /** VM time at the last measurement of the runtime's memory, and what the measurement cost. */
  private lastMeasure = 0;
  private measureCostMs = 0;
  private stopping = false;
  private unwound = false;
  private lastPoll = 0;

  constructor(
    private readonly cellId: string,
    private readonly engine: CellHost,
    private readonly limits: Limits,
    private readonly delegate: EngineDelegate,
    private readonly vm: () => PreparedVm | undefined,
  ) {
    this.account = {
      grownBytes: 0,
      limitBytes: limits.memoryLimitBytes,
      refused: (why) => this.hitLimit(`ran out of memory: ${why}`),
    };
  }

  /** The limit the cell hit, if any. */
  get limitHit(): string | undefined {
    return this.hit;
  }

  /** Whether the cell is being terminated (by request, or by `whileBusy`). */
  get terminating(): boolean {
    return this.stopping;
  }

  /** Whether a host exception unwound the VM: its runtime must never be touched again. */
  get broken(): boolean {
    return this.unwound;
  }

  /** Whether the script is running now (inside `enter`). */
  get inVm(): boolean {
    return this.inside;
  }

  /** Ends the cell at the next interrupt check (a script cannot catch that); returns the limit in effect. */
  hitLimit(why: string): string {
    return (this.hit ??= `exec cell ${this.cellId} ${why}`);
  }

  /** Stops the script at the next interrupt check, as terminated. */
  terminate(): void {
    this.stopping = true;
    this.interruptReason = "terminate";
  }

  shouldInterrupt(): boolean {
    if (this.stopping) return true;
    if (this.hit || this.overMemory()) return true;
    const now = performance.now();
    if (now - this.entryStart > LONG_ENTRY_MS) this.delegate.longEntry?.();
    if (now - this.entryStart + this.cpuUsedMs > this.limits.cpuLimitMs) {
      this.interruptReason = "cpu";
      return true;
    }
    if (this.delegate.whileBusy && now - this.entryStart > BUSY_POLL_MS && now - this.lastPoll > BUSY_POLL_MS) {
      this.lastPoll = now;
      if (this.delegate.whileBusy(this.cellId)) {
        this.terminate();
        return true;
      }
    }
    return false;
  }

  /**
   * Whether the runtime holds more than the cell's limit. Memory freed by earlier cells is
   * reused without growing the heap, so growth alone does not bound a cell: its usage is
   * measured too, by walking the runtime (tens of ms for a full one), so at most every
   * MEASURE_EVERY_MS of VM time and never more than a fifth of it.
   */
  private overMemory(): boolean {
    const spent = this.cpuUsedMs + (performance.now() - this.entryStart);
    if (!this.vm() || spent - this.lastMeasure < Math.max(MEASURE_EVERY_MS, 5 * this.measureCostMs)) return false;
    this.lastMeasure = spent;
    return this.measureMemory();
  }

  /**
   * At the end of a cell that succeeded: a script that caught the limit's error and went on
   * still hit it; one too quick to be measured while it ran is measured now (a trivial cell is
   * not: that costs ~1 ms). Returns the limit the cell hit, if any.
   */
  measureAtEnd(): string | undefined {
    if (!this.hit && this.cpuUsedMs >= END_MEASURE_MIN_MS) this.measureMemory();
    return this.hit;
  }

  /** Measures the runtime; over the limit, the cell has hit it. */
  private measureMemory(): boolean {
    const vm = this.vm();
    if (!vm || this.unwound) return false;
    const t = performance.now();
    const used = vm.usedBytes();
    this.measureCostMs = performance.now() - t;
    if (used === undefined || used <= this.limits.memoryLimitBytes) return false;
    this.hitLimit(
      `ran out of memory: its runtime holds ${Math.round(used / 2 ** 20)} MiB, over its memory limit of ${Math.round(this.limits.memoryLimitBytes / 2 ** 20)} MiB (memory_limit_bytes)`,
    );
    return true;
  }

  /** Runs `fn` inside the VM with CPU accounting; returns an error text or undefined. */
  enter(fn: () => string | undefined): string | undefined {
    this.entryStart = performance.now();
    this.inside = true;
    const heap = this.engine.heap;
    if (heap) heap.running = this.account;
    try {
      const error = fn();
      // An interrupt inside pending jobs can come back as success (the job that was cut short
      // just ends): a limit that fired always ends the cell.
      if (this.interruptReason === "cpu") return this.cpuLimitText();
      return this.hit ?? error;
    } catch (e) {
      // The VM was unwound by a host exception: never touch this runtime again.
      this.unwound = true;
      this.engine.poisoned();
      return `the JS runtime failed: ${(e as Error).message}`;
    } finally {
      if (heap) heap.running = undefined;
      this.inside = false;
      this.cpuUsedMs += performance.now() - this.entryStart;
    }
  }

  private cpuLimitText(): string {
    return `exec cell ${this.cellId} exceeded its CPU time limit of ${this.limits.cpuLimitMs} ms`;
  }

  /** The cell's error for a value the script threw (which is disposed): a limit it hit wins. */
  thrownText(h: QuickJSHandle): string {
    const text = this.errorText(h);
    h.dispose();
    return text;
  }

  private errorText(h: QuickJSHandle): string {
    if (this.interruptReason === "cpu") return this.cpuLimitText();
    // A limit wins over whatever the script threw meanwhile (e.g. its own catch of "out of memory").
    if (this.hit) return this.hit;
    return describeThrown(this.vm()!.ctx, h);
  }

  /** Whether the runtime may hold much of the heap: it grew it, hit a limit or ran long enough to be measured. */
  mayHoldMuch(): boolean {
    return this.account.grownBytes > 0 || this.hit !== undefined || this.cpuUsedMs >= MEASURE_EVERY_MS;
  }
}
