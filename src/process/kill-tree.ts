/**
 * Ends a child and everything it started. A process group is not enough: interactive shells
 * put background jobs in their own groups, and daemons call setsid. Every child the executor
 * starts carries a marker variable, so on Linux the tree is found through /proc (group,
 * session, parent chain, and the marker), whoever re-parented it.
 */

import { readdirSync, readFileSync } from "node:fs";
import { procStatFields } from "../util/proc-stat.ts";

export const MARKER_VAR = "RELAY_EXEC_MARKER";

interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
}

function readStat(pid: number): ProcInfo | undefined {
  const rest = procStatFields(pid);
  return rest && { pid, ppid: Number(rest[1]), pgid: Number(rest[2]), sid: Number(rest[3]) };
}

function hasMarker(pid: number, marker: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`${MARKER_VAR}=${marker}`);
  } catch {
    return false;
  }
}

/** Every process but init and this one, from /proc; undefined where there is no /proc. */
function listProcs(): ProcInfo[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const procs: ProcInfo[] = [];
  for (const e of entries) {
    const pid = Number(e);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    const info = readStat(pid);
    if (info) procs.push(info);
  }
  return procs;
}

/** Pids belonging to the tree rooted at `leader` (leader included), Linux only. */
export function findTree(leader: number, marker?: string): number[] {
  const procs = listProcs();
  return procs ? treeIn(procs, leader, marker) : leader > 1 ? [leader] : [];
}

/** The tree of `leader` among `procs`: its group, its session, its marker, and their descendants. */
function treeIn(procs: ProcInfo[], leader: number, marker?: string): number[] {
  // A leader of -1 (a sandboxed command that never ran) is no process: only its marker counts.
  const real = leader > 1;
  const members = new Set<number>(real ? [leader] : []);
  for (const p of procs) {
    if ((real && (p.pgid === leader || p.sid === leader)) || (marker !== undefined && hasMarker(p.pid, marker)))
      members.add(p.pid);
  }
  // Descendants by parent chain (covers children that changed group and session).
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of procs) {
      if (!members.has(p.pid) && members.has(p.ppid)) {
        members.add(p.pid);
        grew = true;
      }
    }
  }
  return [...members];
}

/** Never signals pid 1, 0 or below: kill(-1) would reach every process this user may signal. */
function signalAll(pids: number[], leader: number, signal: NodeJS.Signals): void {
  try {
    if (leader > 1) process.kill(-leader, signal);
  } catch {
    // group already gone
  }
  for (const pid of pids.filter((p) => p > 1)) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** SIGTERM the whole tree, then SIGKILL whatever is left after `graceMs`. */
export async function killTree(leader: number, marker?: string, graceMs = 250): Promise<void> {
  const tree = findTree(leader, marker);
  signalAll(tree, leader, "SIGTERM");
  if (graceMs > 0) await new Promise((r) => setTimeout(r, graceMs));
  signalAll([...new Set([...tree, ...findTree(leader, marker)])], leader, "SIGKILL");
}

export function killTreeNow(leader: number, marker?: string): void {
  killTreesNow([{ leader, marker }]);
}

/**
 * SIGKILLs several trees at once, reading /proc once for all of them: an executor that ends
 * kills every process it still runs, and each scan reads the stat and environment of every
 * process on the host.
 */
export function killTreesNow(trees: ReadonlyArray<{ leader: number; marker?: string }>): void {
  if (trees.length === 0) return;
  const procs = listProcs();
  for (const t of trees) signalAll(procs ? treeIn(procs, t.leader, t.marker) : [t.leader], t.leader, "SIGKILL");
}
