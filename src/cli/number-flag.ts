/**
 * The one parser of every whole-number flag of every command, so a bad value reads the same
 * everywhere: `--max-steps must be a whole number (got abc)`, `… at least 1 (got 0)`. It exits
 * 2 at once, before anything is started or written.
 */
import { ExitCode, fail } from "./usage.ts";

/** A whole number in [min, max] (budgets and sizes: at least 1; counts: at least 0). */
export const wholeNumber =
  (name: string, min = 1, max = Number.MAX_SAFE_INTEGER) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^\s*\d+\s*$/.test(v) || !Number.isSafeInteger(n))
      fail(`${name} must be a whole number (got ${v})`, ExitCode.Usage);
    if (n < min) fail(`${name} must be at least ${min} (got ${v})`, ExitCode.Usage);
    if (n > max) fail(`${name} must be at most ${max} (got ${v})`, ExitCode.Usage);
    return n;
  };
