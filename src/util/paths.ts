/** Path questions that several rooms ask. */
import { lstatSync } from "node:fs";
import path from "node:path";

/**
 * Whether something (a symlink too, dangling or not) is at `p`. Asked for paths that are
 * often missing, on every command: a missing one is told without an exception, whose stack
 * trace costs 10–130 µs each time.
 */
export function entryAt(p: string): boolean {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // ENOTDIR, EACCES: nothing reachable there
  }
}

/** Whether `child` is `root` or below it, by the path text (resolve symlinks first where they matter). */
export function isInside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  if (rel === "") return true;
  return rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}
