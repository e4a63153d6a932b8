/** Which directories a workspace's files are looked for in: the repository root down to cwd. */
import { lstat } from "node:fs/promises";
import path from "node:path";

/** cwd and its parents up to the directory holding `.git` (root first); just cwd without one. */
export async function projectDirs(cwd: string): Promise<{ root: string | null; dirs: string[] }> {
  const chain: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    chain.push(dir);
    if (await exists(path.join(dir, ".git"))) return { root: dir, dirs: chain.reverse() };
    if (path.dirname(dir) === dir) return { root: null, dirs: [path.resolve(cwd)] };
  }
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}
