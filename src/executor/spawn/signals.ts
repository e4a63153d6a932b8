import os from "node:os";

/** Shell convention: a signal death reports 128 + the signal number. */
export function exitCodeFor(code: number | null, signal: string | null): number {
  if (code !== null && code !== undefined) return code;
  if (signal) {
    const n = (os.constants.signals as Record<string, number>)[signal];
    if (n !== undefined) return 128 + n;
  }
  return -1;
}
