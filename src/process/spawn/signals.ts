import os from "node:os";
import type { ProcessExit } from "./types.ts";

/** Shell convention: a signal death reports 128 + the signal number. */
export function exitCodeFor(code: number | null, signal: string | null): number {
  if (code !== null && code !== undefined) return code;
  if (signal) {
    const n = (os.constants.signals as Record<string, number>)[signal];
    if (n !== undefined) return 128 + n;
  }
  return -1;
}

/** A wait(2) status (exited or killed) as the exit the rest of the executor knows. */
export function exitOfWaitStatus(status: number): ProcessExit {
  const sig = status & 0x7f;
  if (sig === 0) return { code: (status >> 8) & 0xff, signal: null };
  const name = Object.entries(os.constants.signals).find(([, n]) => n === sig)?.[0] ?? null;
  return { code: 128 + sig, signal: name };
}
