/**
 * Durations written by people: `90s`, `5m`, `2h`, `1d`, or `1.5h`. A plain number takes the
 * caller's default unit (minutes for the old `--*-minutes` flags), or is refused when there is
 * none. Results are whole milliseconds within [min, max]; every refusal says what to write.
 */
import { err, ok, type Result } from "./result.ts";

export const DURATION_UNITS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export type DurationUnit = keyof typeof DURATION_UNITS;

/** 24 days: the round value below the longest delay a timer can wait (2^31-1 ms, about 24.8 days; setTimeout fires at once beyond it). */
export const MAX_TIMER_MS = 24 * 86_400_000;

export interface DurationOptions {
  /** Unit of a number written without one; none: the unit is required. */
  defaultUnit?: DurationUnit;
  /** Smallest accepted value in ms (default 1000: one second). */
  minMs?: number;
  /** Largest accepted value in ms (default MAX_TIMER_MS). */
  maxMs?: number;
}

const FORM = /^(\d+(?:\.\d+)?)([smhd]?)$/;

/** `name` is how the value is called in messages (a flag, a config key). */
export function parseDuration(text: string, name: string, o: DurationOptions = {}): Result<number> {
  const minMs = o.minMs ?? 1_000;
  const maxMs = o.maxMs ?? MAX_TIMER_MS;
  const example = o.defaultUnit
    ? `a number of ${unitName(o.defaultUnit)}s or a duration like 90s, 5m, 2h, 1d`
    : "a duration like 90s, 5m, 2h, 1d";
  const m = FORM.exec(text.trim().toLowerCase());
  if (!m) return err("invalid_duration", `${name} must be ${example} (got ${JSON.stringify(text)})`);
  const unit = (m[2] || o.defaultUnit) as DurationUnit | undefined;
  if (Number(m[1]) === 0)
    return err("invalid_duration", `${name} must be at least ${formatDuration(minMs)} (got ${JSON.stringify(text)})`);
  if (!unit)
    return err("invalid_duration", `${name} needs a unit: s, m, h or d, e.g. ${m[1]}m (got ${JSON.stringify(text)})`);
  const ms = Math.round(Number(m[1]) * DURATION_UNITS[unit]);
  if (!Number.isFinite(ms) || ms > maxMs)
    return err("invalid_duration", `${name} must be at most ${formatDuration(maxMs)} (got ${JSON.stringify(text)})`);
  if (ms < minMs)
    return err("invalid_duration", `${name} must be at least ${formatDuration(minMs)} (got ${JSON.stringify(text)})`);
  return ok(ms);
}

function unitName(u: DurationUnit): string {
  return { s: "second", m: "minute", h: "hour", d: "day" }[u];
}

/** The largest unit that divides `ms` evenly, e.g. 5400000 -> "90m", 86400000 -> "1d"; below a second, "<n>ms". */
export function formatDuration(ms: number): string {
  for (const u of ["d", "h", "m", "s"] as const) {
    const size = DURATION_UNITS[u];
    if (ms >= size && ms % size === 0) return `${ms / size}${u}`;
  }
  if (ms >= 1_000) return `${Math.round(ms / 1_000)}s`;
  return `${ms}ms`;
}

/** A time span as people read it: `45s`, `12m 05s`, `3h 02m`, `2d 4h`. */
export function formatElapsed(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const two = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${two(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
