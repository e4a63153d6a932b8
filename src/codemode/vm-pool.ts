/**
 * Prepared VMs for the next cells, and used ones waiting to be freed. Housekeeping waits until
 * no cell has started or ended for QUIET_MS, so it never competes with a command: on a small
 * machine, work the host does right after answering slows the client's reading of that answer
 * too. Only when a burst has used up every spare is one prepared at once, and a request that
 * arrives meanwhile waits for one job at most (one job per event-loop turn).
 */
import { setImmediate } from "node:timers";
import type { PreparedVm } from "./vm.ts";

/** Spares kept ready: a second command right after the first still finds one. */
export const SPARE_VMS = 2;
/** Used VMs kept for freeing later (a prepared runtime holds about 0.2 MB). */
export const MAX_USED_VMS = 32;
const QUIET_MS = 1;

type Handle = { alive: boolean; dispose(): void };

export class VmPool {
  private readonly spares: PreparedVm[] = [];
  private readonly used: Array<() => void> = [];
  private lastActivity = 0;
  private quietTimer: ReturnType<typeof setTimeout> | undefined;
  private urgent: Array<() => void> = [];
  private urgentScheduled = false;
  private refillQueued = false;

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
    if (this.spares.length === 0 && !this.refillQueued) {
      this.refillQueued = true;
      this.soon(() => {
        this.refillQueued = false;
        this.refill();
      });
    }
    this.whenQuiet();
    return vm ?? this.create();
  }

  /** Frees `vm` and `handles` later, off the response path. */
  release(vm: PreparedVm, handles: Handle[]): void {
    this.lastActivity = performance.now();
    this.used.push(() => vm.dispose(handles));
    if (this.used.length > MAX_USED_VMS) this.soon(this.used.shift()!);
    this.whenQuiet();
  }

  /** Frees the spares and every used VM now (an in-process provider closing). */
  drain(): void {
    for (const vm of this.spares.splice(0)) vm.dispose();
    for (const free of this.used.splice(0)) safely(free);
  }

  get counts(): { spares: number; used: number } {
    return { spares: this.spares.length, used: this.used.length };
  }

  private refill(): boolean {
    if (this.spares.length >= SPARE_VMS) return false;
    try {
      this.spares.push(this.create());
    } catch {
      // The next cell reports the failure when it creates its own VM.
      return false;
    }
    return true;
  }

  /** One housekeeping job: a spare first, else a used VM freed. False when nothing was left. */
  private job(): boolean {
    if (this.refill()) return true;
    const free = this.used.shift();
    if (!free) return false;
    safely(free);
    return true;
  }

  /** Housekeeping once the engine has been quiet for QUIET_MS, one job per turn while it stays so. */
  private whenQuiet(): void {
    if (this.quietTimer) return;
    const check = () => {
      const quietFor = performance.now() - this.lastActivity;
      if (quietFor < QUIET_MS) {
        this.quietTimer = setTimeout(check, QUIET_MS - quietFor);
        this.quietTimer.unref?.();
        return;
      }
      this.quietTimer = undefined;
      if (!this.job()) return;
      this.quietTimer = setTimeout(check, 0);
      this.quietTimer.unref?.();
    };
    this.quietTimer = setTimeout(check, QUIET_MS);
    this.quietTimer.unref?.();
  }

  /** Jobs that cannot wait for a quiet moment: two turns later (after this turn's answers), one per turn. */
  private soon(fn: () => void): void {
    this.urgent.push(fn);
    if (this.urgentScheduled) return;
    this.urgentScheduled = true;
    setImmediate(() => setImmediate(() => this.nextUrgent()));
  }

  private nextUrgent(): void {
    const fn = this.urgent.shift();
    if (fn) safely(fn);
    if (this.urgent.length) setImmediate(() => this.nextUrgent());
    else this.urgentScheduled = false;
  }
}

function safely(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // Freeing a VM that is already gone: nothing left to do.
  }
}
