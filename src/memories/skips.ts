/**
 * Why phase 1 left rollouts alone this run, grouped by reason: the `phase1.skipped` object of
 * `relay memories consolidate --json` (schema below, the one definition) and its human text.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";

export const SKIP_REASONS = [
  "too_recent",
  "too_old",
  "no_user_turn",
  "parse_error",
  "unreadable",
  "source_filtered",
  "forgotten",
  "current_session",
  "up_to_date",
  "running",
  "running_cap",
  "retry_backoff",
  "retry_exhausted",
  "claim_limit",
] as const;
export const SkipReasonSchema = lazySchema(() => z.enum(SKIP_REASONS));
export type SkipReason = z.infer<typeof SkipReasonSchema>;

const count = lazySchema(() => z.number().int().nonnegative());

export const SkipReportSchema = lazySchema(() =>
  z.object({
    /** Rollouts skipped, all reasons together. */
    total: count,
    /** Every reason, 0 included. */
    by_reason: z.record(SkipReasonSchema, count),
    /** `source_filtered` by source name (`exec`, `subagent`, ...). */
    sources: z.record(z.string(), count),
    /** `parse_error`: the rollout's first line is not a session_meta; `line` is 1-based. */
    parse_errors: z.array(z.object({ file: z.string(), line: z.number().int().positive(), message: z.string() })),
    /** `unreadable`: the file could not be stat'ed or read. */
    unreadable: z.array(z.object({ file: z.string(), message: z.string() })),
    /** `running_cap`: the cap on running phase 1 jobs that was reached ([memories] max_running_jobs). */
    max_running_jobs: z.number().int().positive().optional(),
  }),
);
export type SkipReport = z.infer<typeof SkipReportSchema>;

export function emptySkips(): SkipReport {
  return {
    total: 0,
    by_reason: Object.fromEntries(SKIP_REASONS.map((r) => [r, 0])) as Record<SkipReason, number>,
    sources: {},
    parse_errors: [],
    unreadable: [],
  };
}

export function addSkip(s: SkipReport, reason: SkipReason, n = 1): void {
  s.total += n;
  s.by_reason[reason] += n;
}

export function addFilteredSource(s: SkipReport, source: string): void {
  addSkip(s, "source_filtered");
  s.sources[source] = (s.sources[source] ?? 0) + 1;
}

export function addParseError(s: SkipReport, file: string, line: number, message: string): void {
  addSkip(s, "parse_error");
  s.parse_errors.push({ file, line, message });
}

export function addUnreadable(s: SkipReport, file: string, message: string): void {
  addSkip(s, "unreadable");
  s.unreadable.push({ file, message });
}

const LABEL: Record<SkipReason, string | ((s: SkipReport) => string)> = {
  too_recent: "too recent (idle < min_rollout_idle_hours)",
  too_old: "too old (> max_rollout_age_days)",
  no_user_turn: "no user turn",
  parse_error: "parse error",
  unreadable: "unreadable",
  source_filtered: "source filtered",
  forgotten: "forgotten",
  current_session: "the running session",
  up_to_date: "already extracted",
  running: "held by another worker",
  running_cap: (s) =>
    s.max_running_jobs
      ? `claim cap ${s.max_running_jobs} reached (max_running_jobs)`
      : "claim cap reached (max_running_jobs)",
  retry_backoff: "in retry backoff",
  retry_exhausted: "retries exhausted",
  claim_limit: "over this run's claim limit (next run)",
};

/** `skipped=5 (too recent (...) 2, source filtered 3: exec 2, subagent 1)`; empty when nothing was skipped. */
export function skipSummary(s: SkipReport): string {
  if (!s.total) return "";
  const parts = SKIP_REASONS.filter((r) => s.by_reason[r] > 0).map((r) => {
    const detail =
      r === "source_filtered"
        ? `: ${Object.entries(s.sources)
            .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
            .map(([k, v]) => `${k} ${v}`)
            .join(", ")}`
        : "";
    const label = LABEL[r];
    return `${typeof label === "string" ? label : label(s)} ${s.by_reason[r]}${detail}`;
  });
  return `skipped=${s.total} (${parts.join(", ")})`;
}

/** One line per parse error (`file:line: message`) and unreadable file, at most `max` of them. */
export function skipDetailLines(s: SkipReport, max = 20): string[] {
  const all = [
    ...s.parse_errors.map((p) => `skipped ${p.file}:${p.line}: ${p.message}`),
    ...s.unreadable.map((u) => `skipped ${u.file}: ${u.message}`),
  ];
  if (all.length <= max) return all;
  return [...all.slice(0, max), `... and ${all.length - max} more skipped files (see --json: phase1.skipped)`];
}
