/**
 * Each role's share of a run's budgets, folded from events.jsonl as it grows (each line is read
 * once): tokens from the heartbeats' per-role counts (a process counts from zero, so each
 * run_started closes the previous process's share), turns and the time they took from the
 * role's turn_started / turn_completed lines.
 */

import { verifierNumber } from "../../config/infty/index.ts";
import { KnownLogEventSchema, parseLogLine } from "../event-log.ts";
import type { RoleBudget } from "./api-schemas.ts";
import type { EventLogIndex } from "./event-index.ts";

const PAGE = 2000;

interface RoleFold {
  tokensBefore: number;
  tokensNow: number;
  busyMs: number;
  turns: number;
  turnSince?: number;
}

export class RoleBudgetFold {
  private folded = 0;
  private generation = 0;
  private lastAt = 0;
  private readonly roles = new Map<string, RoleFold>();
  private folding: Promise<void> | undefined;

  constructor(private readonly index: EventLogIndex) {}

  /** Folds the lines indexed since the last call. */
  update(): Promise<void> {
    this.folding ??= this.foldNew().finally(() => (this.folding = undefined));
    return this.folding;
  }

  private async foldNew(): Promise<void> {
    await this.index.refresh();
    if (this.index.generation !== this.generation) {
      this.reset();
      this.generation = this.index.generation;
    }
    while (this.folded < this.index.count) {
      const lines = await this.index.read(this.folded, PAGE);
      if (lines.length === 0) break;
      for (const line of lines) this.apply(line);
      this.folded += lines.length;
    }
  }

  private reset(): void {
    this.folded = 0;
    this.roles.clear();
  }

  private role(name: string): RoleFold {
    let r = this.roles.get(name);
    if (!r) this.roles.set(name, (r = { tokensBefore: 0, tokensNow: 0, busyMs: 0, turns: 0 }));
    return r;
  }

  private apply(line: string): void {
    const parsed = KnownLogEventSchema.safeParse(parseLogLine(line));
    if (!parsed.success) return;
    const e = parsed.data;
    const at = Date.parse(e.at);
    if (Number.isFinite(at)) this.lastAt = Math.max(this.lastAt, at);
    switch (e.type) {
      case "run_started":
        for (const r of this.roles.values()) {
          r.tokensBefore += r.tokensNow;
          r.tokensNow = 0;
          r.turnSince = undefined;
        }
        return;
      case "heartbeat":
      case "run_finished":
        for (const a of e.roles ?? []) this.role(a.role).tokensNow = a.tokens;
        return;
      case "role": {
        const r = this.role(e.role);
        if (e.event.kind === "turn_started") {
          r.turns++;
          r.turnSince = at;
        } else if (
          (e.event.kind === "turn_completed" || e.event.kind === "turn_aborted") &&
          r.turnSince !== undefined
        ) {
          r.busyMs += Math.max(0, at - r.turnSince);
          r.turnSince = undefined;
        }
        return;
      }
      default:
        return;
    }
  }

  /** Each role's figures; a turn still open counts up to `now` (a live run) or to the last line. */
  snapshot(live: boolean, now = Date.now()): RoleBudget[] {
    const until = live ? now : this.lastAt;
    const order = (role: string) => (role === "solver" ? 0 : role === "director" ? 1 : 2 + verifierNumber(role));
    return [...this.roles.entries()]
      .sort(([a], [b]) => order(a) - order(b))
      .map(([role, r]) => ({
        role,
        tokens: r.tokensBefore + r.tokensNow,
        busy_ms: Math.round(r.busyMs + (r.turnSince !== undefined ? Math.max(0, until - r.turnSince) : 0)),
        turns: r.turns,
      }));
  }
}
