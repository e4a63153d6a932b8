/**
 * Who owns a `relay-path-*` directory (relay-path.ts), written into its name, so that an
 * executor can remove the directories of executors that are gone: a SIGKILLed executor runs no
 * exit handler and leaves its directory behind. The name records the owner's pid, its start time
 * (field 22 of /proc/PID/stat, which tells a reused pid apart) and its pid namespace (a pid means
 * nothing in another one): `relay-path-<pid>-<start>-<pidns>-XXXXXX`. Only Linux has all three;
 * elsewhere the name records no owner and is never swept. A directory is removed only when its
 * name carries an owner record, it belongs to this user, its owner's namespace is this one, and
 * that pid is gone or now a process with another start time.
 */
import { readlinkSync } from "node:fs";
import { lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";
import { readStartTime } from "../util/proc-stat.ts";

export const RELAY_PATH_PREFIX = "relay-path-";

export interface DirOwner {
  pid: number;
  /** Clock ticks since boot, as /proc/PID/stat writes it. */
  start: string;
  /** The inode of the owner's pid namespace (/proc/PID/ns/pid). */
  pidns: string;
}

const OWNED = /^relay-path-(\d+)-(\d+)-(\d+)-[A-Za-z0-9]{6}$/;

/** The pid namespace this process is in, or undefined without Linux's /proc. */
function ownPidNamespace(): string | undefined {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))?.[1];
  } catch {
    return undefined;
  }
}

/** This process as an owner record, or undefined where it cannot be told (no /proc). */
export function selfOwner(): DirOwner | undefined {
  const start = readStartTime(process.pid);
  const pidns = ownPidNamespace();
  return start && pidns ? { pid: process.pid, start, pidns } : undefined;
}

/** The `mkdtemp` prefix of a directory `owner` owns: a plain `relay-path-` without an owner. */
export function ownedDirPrefix(owner: DirOwner | undefined): string {
  return owner ? `${RELAY_PATH_PREFIX}${owner.pid}-${owner.start}-${owner.pidns}-` : RELAY_PATH_PREFIX;
}

/** The owner a directory's name records, or undefined when it records none. */
export function ownerOf(name: string): DirOwner | undefined {
  const m = OWNED.exec(name);
  return m ? { pid: Number(m[1]), start: m[2]!, pidns: m[3]! } : undefined;
}

/** Whether `owner`, of this pid namespace, is gone: no such process, a zombie, or the pid reused. */
function ownerGone(owner: DirOwner, pidns: string): boolean {
  return owner.pidns === pidns && readStartTime(owner.pid) !== owner.start;
}

/**
 * Removes the `relay-path-*` directories in `tmp` whose owners are gone (see the top of this
 * file for which ones); returns their paths. Nothing it cannot read or remove stops it.
 */
export async function removeGoneOwnersDirs(tmp: string): Promise<string[]> {
  const pidns = ownPidNamespace();
  const uid = process.getuid?.();
  if (pidns === undefined || uid === undefined) return [];
  const removed: string[] = [];
  for (const name of await readdir(tmp).catch((): string[] => [])) {
    const owner = ownerOf(name);
    if (!owner || !ownerGone(owner, pidns)) continue;
    const dir = path.join(tmp, name);
    const st = await lstat(dir).catch(() => undefined);
    if (!st?.isDirectory() || st.uid !== uid) continue;
    if (
      await rm(dir, { recursive: true, force: true }).then(
        () => true,
        () => false,
      )
    )
      removed.push(dir);
  }
  return removed;
}
