/**
 * The hard bound on code mode's memory. QuickJS's own limit (JS_SetMemoryLimit) does not hold
 * in this wasm build: it counts each allocation by malloc_usable_size, which emscripten builds
 * report as 0, so a script that only allocates grows the wasm heap to its 2 GiB maximum. Every
 * VM of a host lives in that one heap, and the heap grows only through its Memory's `grow`
 * (emscripten's sbrk calls it and treats a throw as "no memory", so malloc returns NULL and
 * QuickJS throws "out of memory"). So growth is decided here:
 *   - the host's heap never exceeds its ceiling (a fixed overhead plus the limits of the open
 *     sessions), whichever VM asks;
 *   - growth while a cell runs is charged to that cell, which may not grow the heap by more
 *     than its limit.
 * The heap never shrinks; memory a finished cell freed is reused inside it, where the cell's
 * measured usage (Cell) is the bound.
 */

/** What a running cell is charged with, and how it hears that it hit a limit. */
export interface HeapAccount {
  grownBytes: number;
  limitBytes: number;
  refused(message: string): void;
}

/** Room for the module itself, prepared VMs and allocator slack, on top of the sessions' limits. */
export const FIXED_HEAP_OVERHEAD_BYTES = 48 * 1024 * 1024;
const PAGE = 65536;

const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;

export class HeapGuard {
  /** The cell whose script is running now (one at a time: the host is single-threaded). */
  running: HeapAccount | undefined;
  private readonly base: number;

  constructor(
    private readonly memory: WebAssembly.Memory,
    /** The sum of the open sessions' memory limits. */
    private readonly sessionLimits: () => number,
  ) {
    this.base = memory.buffer.byteLength;
    const grow = WebAssembly.Memory.prototype.grow;
    const guard = this;
    Object.defineProperty(memory, "grow", {
      configurable: true,
      value(this: WebAssembly.Memory, pages: number): number {
        const refusal = guard.refusal(pages * PAGE);
        if (refusal) throw new RangeError(refusal);
        const before = grow.call(this, pages);
        if (guard.running) guard.running.grownBytes += pages * PAGE;
        return before;
      },
    });
  }

  get heapBytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** The most the heap may hold now. */
  get ceilingBytes(): number {
    return this.base + FIXED_HEAP_OVERHEAD_BYTES + this.sessionLimits();
  }

  /** Why growing by `bytes` is refused, or undefined when it may grow. */
  private refusal(bytes: number): string | undefined {
    const cell = this.running;
    if (cell && cell.grownBytes + bytes > cell.limitBytes) {
      const message = `it would use more than its memory limit of ${mib(cell.limitBytes)} (memory_limit_bytes)`;
      cell.refused(message);
      return message;
    }
    if (this.heapBytes + bytes > this.ceilingBytes) {
      const message = `the code-mode host's memory is full (${mib(this.ceilingBytes)}: its sessions' limits plus ${mib(FIXED_HEAP_OVERHEAD_BYTES)}); other sessions are using it`;
      cell?.refused(message);
      return message;
    }
    return undefined;
  }
}
