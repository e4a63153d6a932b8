/** Which scanned rollouts phase 1 may claim, and why each other one is skipped (one rule, pure). */

import { NEVER_READ_SOURCES } from "../rollout/sources.ts";
import { addFilteredSource, addSkip, type SkipReason, type SkipReport } from "./skips.ts";
import type { ThreadRow } from "./store/rows.ts";

export interface EligibilityRules {
  nowMs: number;
  maxAgeDays: number;
  minIdleHours: number;
  sources: readonly string[];
  excludeThreadId?: string;
}

/** What eligibility looks at of a row. */
export type Eligible = Pick<ThreadRow, "id" | "source" | "memory_mode" | "updated_at_ms">;

/** Why `t` is not a candidate; undefined when it is. The order decides which reason a rollout gets. */
export function skipReasonOf(t: Eligible, r: EligibilityRules): SkipReason | undefined {
  if (t.memory_mode !== "enabled") return "forgotten";
  if (r.excludeThreadId !== undefined && t.id === r.excludeThreadId) return "current_session";
  if (NEVER_READ_SOURCES.includes(t.source) || !r.sources.includes(t.source)) return "source_filtered";
  if (t.updated_at_ms > r.nowMs - Math.max(0, r.minIdleHours) * 3_600_000) return "too_recent";
  if (t.updated_at_ms < r.nowMs - Math.max(0, r.maxAgeDays) * 86_400_000) return "too_old";
  return undefined;
}

/** Newest first, ties by id descending: the order phase 1 claims candidates in. */
function newestFirst(a: Eligible, b: Eligible): number {
  return b.updated_at_ms - a.updated_at_ms || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/**
 * Candidates newest first (ties by id, descending), at most `limit`; every other row is counted
 * in `skipped`. Rows may be whole rows or, as in phase 1, just what eligibility looks at.
 */
export function selectCandidates<T extends Eligible>(
  rows: Iterable<T>,
  r: EligibilityRules,
  limit: number,
  skipped: SkipReport,
): T[] {
  const out: T[] = [];
  for (const t of rows) {
    const why = skipReasonOf(t, r);
    if (why === "source_filtered") addFilteredSource(skipped, t.source);
    else if (why) addSkip(skipped, why);
    else out.push(t);
  }
  out.sort(newestFirst);
  if (out.length > limit) addSkip(skipped, "claim_limit", out.length - limit);
  return out.slice(0, limit);
}
