/** Linux's /proc/PID/stat, read by the few places that need a process's state, parent or start. */
import { readFileSync } from "node:fs";

/**
 * The fields after the command name (field 3, the state, comes first: index i holds field i + 3),
 * or undefined when the process is gone or this is not Linux. The name is in parentheses and may
 * itself hold spaces and parentheses, so the split starts after the last ")".
 */
export function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** Field 22: the start time in clock ticks since boot. */
export const START_TIME_FIELD = 19;

/** Field 22 (start time in clock ticks since boot) of a running process, or undefined if it is gone or a zombie. */
export function readStartTime(pid: number): string | undefined {
  const fields = procStatFields(pid);
  return !fields || fields[0] === "Z" || fields[0] === "X" ? undefined : fields[START_TIME_FIELD];
}
