/** A cell's pending timers (`setTimeout` in the script), capped because they live outside the VM. */

export const MAX_TIMERS = 10_000;

export class CellTimers {
  private readonly timers = new Map<number, ReturnType<typeof setTimeout>>();

  constructor(private readonly fire: (id: number) => void) {}

  get size(): number {
    return this.timers.size;
  }

  /** Starts timer `id`; returns the limit text when too many are pending. */
  set(id: number, ms: number): string | undefined {
    if (this.timers.size >= MAX_TIMERS) return `too many pending timers (at most ${MAX_TIMERS})`;
    const t = setTimeout(() => {
      this.timers.delete(id);
      this.fire(id);
    }, ms);
    this.timers.set(id, t);
    return undefined;
  }

  clear(id: number): void {
    const t = this.timers.get(id);
    if (t !== undefined) clearTimeout(t);
    this.timers.delete(id);
  }

  clearAll(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
