/**
 * The run store's folders as git trees, both ways. `snapshotTree` hashes only files whose size,
 * mtime, inode or mode changed since the last snapshot (a stat cache beside the repository, as
 * git's index does), so a checkpoint of an unchanged store reads no file and writes no blob.
 * `materializeTree` makes a folder hold exactly a tree's files, each written atomically; it is
 * idempotent, so a restore cut short is finished by running it again.
 */
import { Buffer } from "node:buffer";
import { chmod, lstat, mkdir, readdir, readFile, rm, rmdir } from "node:fs/promises";
import path from "node:path";
import { parseJsonWith } from "../util/json.ts";
import { writeFileAtomic } from "./durable.ts";
import { StatCacheSchema, type StatCache } from "./checkpoint-format.ts";
import { gitFs, type Git } from "./git-store.ts";

/** mtimes this close to the cache's writing may hide a change of the same size (git's "racy clean"). */
const RACY_MS = 2000;

interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: "blob" | "tree";
}

export interface Snapshotter {
  git: Git;
  gitdir: string;
  cache: StatCache;
  seen: StatCache["files"];
}

const cacheFile = (gitdir: string) => path.join(gitdir, "relay-stat-cache.json");

export async function openSnapshotter(git: Git, gitdir: string): Promise<Snapshotter> {
  const text = await readFile(cacheFile(gitdir), "utf8").catch(() => undefined);
  const parsed = text === undefined ? undefined : parseJsonWith(StatCacheSchema, text, cacheFile(gitdir), { code: "stat_cache_invalid" });
  const cache = parsed && "ok" in parsed ? parsed.ok : { version: 1 as const, written_at_ms: 0, files: {} };
  return { git, gitdir, cache, seen: {} };
}

/** Saves what this snapshot hashed, for the next one. */
export async function saveStatCache(s: Snapshotter): Promise<void> {
  // A cache: whole or absent after a crash is enough; losing it costs a re-hash, not a checkpoint.
  await writeFileAtomic(cacheFile(s.gitdir), JSON.stringify({ version: 1, written_at_ms: Date.now(), files: s.seen } satisfies StatCache), { sync: false });
}

async function blobOid(s: Snapshotter, abs: string, rel: string): Promise<{ oid: string; mode: string } | undefined> {
  const st = await lstat(abs).catch(() => undefined);
  if (!st?.isFile()) return undefined;
  const mode = st.mode & 0o111 ? "100755" : "100644";
  const hit = s.cache.files[rel];
  const racy = st.mtimeMs >= s.cache.written_at_ms - RACY_MS;
  if (hit && !racy && hit.size === st.size && hit.mtime_ms === st.mtimeMs && hit.ino === st.ino && hit.mode === mode) {
    s.seen[rel] = hit;
    return { oid: hit.oid, mode };
  }
  const data = await readFile(abs).catch(() => undefined);
  if (!data) return undefined;
  const oid = await s.git.writeBlob({ fs: gitFs, gitdir: s.gitdir, blob: data });
  s.seen[rel] = { size: st.size, mtime_ms: st.mtimeMs, ino: st.ino, mode, oid };
  return { oid, mode };
}

/** The tree of `root/rel` (regular files and folders; links and other kinds are left out). */
export async function snapshotTree(s: Snapshotter, root: string, rel: string): Promise<string> {
  const entries: TreeEntry[] = [];
  const dirents = await readdir(path.join(root, rel), { withFileTypes: true }).catch(() => []);
  for (const e of dirents) {
    const childRel = `${rel}/${e.name}`;
    if (e.isDirectory()) {
      entries.push({ mode: "040000", path: e.name, oid: await snapshotTree(s, root, childRel), type: "tree" });
    } else if (e.isFile()) {
      const b = await blobOid(s, path.join(root, childRel), childRel);
      if (b) entries.push({ mode: b.mode, path: e.name, oid: b.oid, type: "blob" });
    }
  }
  return s.git.writeTree({ fs: gitFs, gitdir: s.gitdir, tree: entries });
}

/** path (relative to the tree) → blob oid and mode, for every file of a tree. */
async function treeFiles(git: Git, gitdir: string, oid: string, prefix = ""): Promise<Map<string, { oid: string; mode: string }>> {
  const out = new Map<string, { oid: string; mode: string }>();
  const { tree } = await git.readTree({ fs: gitFs, gitdir, oid });
  for (const e of tree) {
    const p = prefix ? `${prefix}/${e.path}` : e.path;
    if (e.type === "tree") for (const [k, v] of await treeFiles(git, gitdir, e.oid, p)) out.set(k, v);
    else if (e.type === "blob") out.set(p, { oid: e.oid, mode: e.mode });
  }
  return out;
}

/** Every file under `dir`, relative to it, and every folder (deepest first). */
async function walk(dir: string, rel = ""): Promise<{ files: string[]; dirs: string[] }> {
  const files: string[] = [];
  const dirs: string[] = [];
  for (const e of await readdir(path.join(dir, rel), { withFileTypes: true }).catch(() => [])) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      const sub = await walk(dir, p);
      files.push(...sub.files);
      dirs.push(...sub.dirs, p);
    } else files.push(p);
  }
  return { files, dirs };
}

/** Makes `dir` hold exactly the files of tree `oid` (undefined: an empty folder). */
export async function materializeTree(git: Git, gitdir: string, oid: string | undefined, dir: string): Promise<void> {
  const want = oid ? await treeFiles(git, gitdir, oid) : new Map<string, { oid: string; mode: string }>();
  await mkdir(dir, { recursive: true });
  const have = await walk(dir);
  for (const f of have.files) if (!want.has(f)) await rm(path.join(dir, f), { recursive: true, force: true });
  for (const [rel, blob] of want) {
    const abs = path.join(dir, rel);
    const { blob: data } = await git.readBlob({ fs: gitFs, gitdir, oid: blob.oid });
    const current = await readFile(abs).catch(() => undefined);
    const mode = blob.mode === "100755" ? 0o755 : 0o644;
    if (!current || !Buffer.from(data).equals(current)) {
      await rm(abs, { recursive: true, force: true }).catch(() => {});
      await mkdir(path.dirname(abs), { recursive: true });
      await writeFileAtomic(abs, data, { mode });
    }
    await chmod(abs, mode);
  }
  // Folders left empty by the removals go too (deepest first); a folder holding files stays.
  for (const d of have.dirs) await rmdir(path.join(dir, d)).catch(() => {});
}
