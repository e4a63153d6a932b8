/** Executor limits (numbers follow the reference system's unified exec). */
export const MIN_YIELD_TIME_MS = 250;
export const MAX_YIELD_TIME_MS = 30_000;
export const DEFAULT_EXEC_YIELD_TIME_MS = 10_000;
export const DEFAULT_WRITE_YIELD_TIME_MS = 250;
/** An empty write is a poll: it waits at least this long unless the process exits. */
export const MIN_EMPTY_POLL_MS = 5_000;
export const MAX_EMPTY_POLL_MS = 300_000;
export const DEFAULT_MAX_OUTPUT_TOKENS = 10_000;
export const OUTPUT_BUFFER_BYTES = 1024 * 1024;
/** keep_full_output: the most output the executor holds at a time, over all its processes. */
export const FULL_OUTPUT_MAX_BYTES = 64 * 1024 * 1024;
/** Full outputs waiting for `process/read_output`; older ones are let go. */
export const MAX_HELD_FULL_OUTPUTS = 4;
export const MAX_PROCESSES = 64;
export const PROTECTED_RECENT_PROCESSES = 8;
/** After exit, how long to wait for output still in flight. */
export const TRAILING_OUTPUT_GRACE_MS = 50;

export function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}
