/**
 * Prepared VMs for the next cells, and used ones waiting to be freed.
 *
 * Making a VM (about 0.1 ms hot, several times that cold) and freeing one never happen while
 * commands are arriving: a burst takes prepared spares, and housekeeping waits until no cell has
 * started or ended for QUIET_MS. It then does one job per timer tick, so a request that arrives
 * meanwhile waits for one job at most. Never on immediates: under Bun, a loop kept busy with
 * immediates reads its input late (an echo that takes 0.05 ms arrived after 0.3-5 ms), so the
 * request would wait for all of it. Only a burst longer than the spares makes a VM on the spot.
 */
import type { PreparedVm } from "./vm.ts";

/** Spares kept ready: a burst of this many commands finds every VM prepared (about 0.2 MB each). */
export const SPARE_VMS = 8;
/** Used VMs kept for freeing later; past this, the oldest are freed on the next timer tick. */
export const MAX_USED_VMS = 32;
const QUIET_MS = 1;

type Handle = { alive: boolean; dispose(): void };

export class VmPool {
  private readonly spares: PreparedVm[] = [];
  private readonly used: Array<() => void> = [];
  private lastActivity = 0;
  private quietTimer: ReturnType<typeof setTimeout> | undefined;
  private overflowTimer: ReturnType<typeof setTimeout> | undefined;
  private settledWaiters: Array<() => void> = [];

  /** `create` makes a VM for the current wasm module; `current` says whether a VM still is one. */
  constructor(
    private readonly create: () => PreparedVm,
    private readonly current: (vm: PreparedVm) => boolean,
  ) {}

  /** A prepared VM: a spare, or one made now (throws when none can be allocated). */
  take(): PreparedVm {
    this.lastActivity = performance.now();
    let vm = this.spares.pop();
    while (vm && !this.current(vm)) {
      vm.dispose();
      vm = this.spares.pop();
    }
    this.whenQuiet();
    return vm ?? this.create();
  }

  /** Frees `vm` and `handles` later, off the response path. */
  release(vm: PreparedVm, handles: Handle[]): void {
    this.lastActivity = performance.now();
    this.used.push(() => vm.dispose(handles));
    if (this.used.length > MAX_USED_VMS) this.freeOverflow();
    this.whenQuiet();
  }

  /** Frees the spares and every used VM now (an in-process provider closing). */
  drain(): void {
    if (this.quietTimer) clearTimeout(this.quietTimer);
    if (this.overflowTimer) clearTimeout(this.overflowTimer);
    this.quietTimer = this.overflowTimer = undefined;
    for (const vm of this.spares.splice(0)) vm.dispose();
    for (const free of this.used.splice(0)) safely(free);
  }

  get counts(): { spares: number; used: number } {
    return { spares: this.spares.length, used: this.used.length };
  }

  /** Nothing left for housekeeping: every spare prepared, every used VM freed. */
  get settled(): boolean {
    return this.used.length === 0 && this.spares.length >= SPARE_VMS;
  }

  /**
   * Resolves once the housekeeping a take or release started has nothing left (`settled`), for
   * tests to wait on instead of polling; while someone waits, its timer keeps the process alive.
   */
  whenSettled(): Promise<void> {
    if (this.settled) return Promise.resolve();
    this.quietTimer?.ref?.();
    return new Promise((r) => this.settledWaiters.push(r));
  }

  /** One housekeeping job: a spare first, else a used VM freed. False when nothing was left. */
  private job(): boolean {
    if (this.spares.length < SPARE_VMS) {
      try {
        this.spares.push(this.create());
        return true;
      } catch {
        // The next cell reports the failure when it makes its own VM; free memory meanwhile.
      }
    }
    const free = this.used.shift();
    if (!free) return false;
    safely(free);
    return true;
  }

  /** Housekeeping once the engine has been quiet for QUIET_MS, one job per tick while it stays so. */
  private whenQuiet(): void {
    if (this.quietTimer) return;
    const check = () => {
      this.quietTimer = undefined;
      const quietFor = performance.now() - this.lastActivity;
      if (quietFor < QUIET_MS) return this.later(check, QUIET_MS - quietFor);
      if (this.job()) this.later(check, 0);
      if (this.settled) for (const r of this.settledWaiters.splice(0)) r();
    };
    this.later(check, QUIET_MS);
  }

  private later(fn: () => void, ms: number): void {
    this.quietTimer = setTimeout(fn, ms);
    if (this.settledWaiters.length === 0) this.quietTimer.unref?.();
  }

  /** A burst that outran the bound: free the excess on the next tick, not on the response path. */
  private freeOverflow(): void {
    if (this.overflowTimer) return;
    this.overflowTimer = setTimeout(() => {
      this.overflowTimer = undefined;
      while (this.used.length > MAX_USED_VMS) safely(this.used.shift()!);
    }, 0);
    this.overflowTimer.unref?.();
  }
}

function safely(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // Freeing a VM that is already gone: nothing left to do.
  }
}
