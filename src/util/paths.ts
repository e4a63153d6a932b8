/** Path questions that several rooms ask. */
import path from "node:path";

/** Whether `child` is `root` or below it, by the path text (resolve symlinks first where they matter). */
export function isInside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  if (rel === "") return true;
  return rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}
