/**
 * `store`/`load` values (JSON text). A session's committed values live in `StoredValues`; a
 * cell writes into its own `CellWrites` overlay, committed only when the cell completes
 * normally. The values live in the host's heap, outside the QuickJS memory limit, so a session
 * has its own byte budget.
 */
export const DEFAULT_STORED_BYTES_LIMIT = 16 * 1024 * 1024;

const size = (key: string, json: string) => 2 * (key.length + json.length);

export class StoredValues {
  private readonly values = new Map<string, string>();
  private total = 0;

  constructor(readonly limitBytes = DEFAULT_STORED_BYTES_LIMIT) {}

  get bytes(): number {
    return this.total;
  }

  get(key: string): string | undefined {
    return this.values.get(key);
  }

  commit(writes: ReadonlyMap<string, string>): void {
    for (const [k, v] of writes) {
      const old = this.values.get(k);
      if (old !== undefined) this.total -= size(k, old);
      this.values.set(k, v);
      this.total += size(k, v);
    }
  }
}

export class CellWrites {
  private readonly writes = new Map<string, string>();
  /** Bytes these writes add to the committed values (as of when each write was made). */
  private delta = 0;

  constructor(private readonly base: StoredValues) {}

  get(key: string): string | undefined {
    return this.writes.get(key) ?? this.base.get(key);
  }

  /** Characters a new value may have and still fit the session's budget (the script's VM cuts longer ones there). */
  roomChars(): number {
    return Math.max(0, Math.floor((this.base.limitBytes - this.base.bytes - this.delta) / 2));
  }

  overBudget(key: string): string {
    return `Unable to store ${JSON.stringify(key)}: this session's stored values would exceed ${this.base.limitBytes} bytes.`;
  }

  /** Records a write; returns an error message when the session's budget would be exceeded. */
  set(key: string, json: string): string | undefined {
    const prev = this.get(key);
    const change = size(key, json) - (prev === undefined ? 0 : size(key, prev));
    if (change > 0 && this.base.bytes + this.delta + change > this.base.limitBytes) return this.overBudget(key);
    this.writes.set(key, json);
    this.delta += change;
    return undefined;
  }

  commit(): void {
    this.base.commit(this.writes);
    this.discard();
  }

  discard(): void {
    this.writes.clear();
    this.delta = 0;
  }
}
