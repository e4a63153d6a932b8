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
import type { Changes } from "./change-feed.ts";
import { type StatCache, StatCacheSchema } from "./checkpoint-format.ts";
import { writeFileAtomic } from "./durable.ts";
import { type Git, gitFs, readCache } from "./git-store.ts";
import { count } from "./work-count.ts";

/** mtimes this close to the cache's writing may hide a change of the same size (git's "racy clean"). */
const RACY_MS = 2000;
/** Checkpoints between two saves of the stat cache (it is also saved after every full look). */
const SAVE_EVERY = 50;

interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: "blob" | "tree";
}

/** A folder as the last checkpoint saw it: its entries, and its tree's oid while none changed. */
interface Folder {
  entries: Map<string, TreeEntry>;
  oid?: string;
}

const cacheFile = (gitdir: string) => path.join(gitdir, "relay-stat-cache.json");
const parentOf = (rel: string) => rel.slice(0, Math.max(0, rel.lastIndexOf("/")));
const nameOf = (rel: string) => rel.slice(rel.lastIndexOf("/") + 1);

/**
 * The run store's folders as git trees, kept between checkpoints: a checkpoint looks at what
 * the change feed names (a file: its stat, and its content only when that changed; a folder:
 * everything under it) and writes the trees of the folders on the way up from it, reusing the
 * others' oids. A full look (the first, or when the feed is in doubt) stats every file, as
 * git's index does, and hashes only those whose size, mtime, inode or mode changed.
 */
export class Snapshotter {
  private readonly folders = new Map<string, Folder>();
  private readonly seen: StatCache["files"];
  private sinceSave = 0;
  /** The checkpoint this snapshotter's driver took last. */
  last: { commit: string; seq: number } | undefined;

  private constructor(
    readonly git: Git,
    readonly gitdir: string,
    private readonly cache: StatCache,
  ) {
    this.seen = { ...cache.files };
  }

  /** A snapshotter that knows nothing yet but the stat cache a previous process saved. */
  static async open(git: Git, gitdir: string): Promise<Snapshotter> {
    const text = await readFile(cacheFile(gitdir), "utf8").catch(() => undefined);
    const parsed =
      text === undefined
        ? undefined
        : parseJsonWith(StatCacheSchema, text, cacheFile(gitdir), { code: "stat_cache_invalid" });
    return new Snapshotter(
      git,
      gitdir,
      parsed && "ok" in parsed ? parsed.ok : { version: 1, written_at_ms: 0, files: {} },
    );
  }

  /**
   * The tree oid of `root/dir` now. `changes` says what may have changed since the last call
   * (ALL: look at everything); `leaveOut` names files not stored (the append-only logs whose
   * size a checkpoint records instead).
   */
  async tree(root: string, dir: string, changes: Changes, leaveOut: ReadonlySet<string>): Promise<string> {
    if (changes.all || !this.folders.has(dir)) {
      await this.scan(root, dir, leaveOut);
    } else {
      for (const p of changes.paths)
        if (p === dir || p.startsWith(`${dir}/`)) await this.lookAt(root, p, dir, leaveOut);
    }
    return this.oidOf(dir);
  }

  /** Saves what was hashed, for a later process's first look (now and then: it holds every file). */
  async save(force = false): Promise<void> {
    if (!force && ++this.sinceSave < SAVE_EVERY) return;
    this.sinceSave = 0;
    // A cache: whole or absent after a crash is enough; losing it costs a re-hash, not a checkpoint.
    await writeFileAtomic(
      cacheFile(this.gitdir),
      JSON.stringify({ version: 1, written_at_ms: Date.now(), files: this.seen } satisfies StatCache),
      { sync: false },
    );
  }

  /** Every file and folder under `rel`, looked at again. */
  private async scan(root: string, rel: string, leaveOut: ReadonlySet<string>): Promise<void> {
    count("listed");
    const dirents = await readdir(path.join(root, rel), { withFileTypes: true }).catch(() => []);
    // Files gone from under `rel` leave the stat cache too.
    for (const k of Object.keys(this.seen))
      if (k.startsWith(`${rel}/`) && !dirents.some((e) => k.slice(rel.length + 1).split("/")[0] === e.name))
        delete this.seen[k];
    for (const k of [...this.folders.keys()]) if (k === rel || k.startsWith(`${rel}/`)) this.folders.delete(k);
    const entries = new Map<string, TreeEntry>();
    for (const e of dirents) {
      const childRel = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        await this.scan(root, childRel, leaveOut);
        entries.set(e.name, { mode: "040000", path: e.name, oid: "", type: "tree" });
      } else if (e.isFile() && !leaveOut.has(childRel)) {
        const b = await this.blobOid(path.join(root, childRel), childRel);
        if (b) entries.set(e.name, { mode: b.mode, path: e.name, oid: b.oid, type: "blob" });
      }
    }
    this.folders.set(rel, { entries });
  }

  /** One changed path under `top`: a file, a folder, or a path now gone; its folders above are written again. */
  private async lookAt(root: string, rel: string, top: string, leaveOut: ReadonlySet<string>): Promise<void> {
    const parent = parentOf(rel);
    // A path in a folder the model does not hold yet: that folder (the highest one missing) is scanned.
    if (rel !== top && !this.folders.has(parent)) {
      let missing = parent;
      while (parentOf(missing) !== top && !this.folders.has(parentOf(missing))) missing = parentOf(missing);
      return this.lookAt(root, missing, top, leaveOut);
    }
    count("statted");
    const st = await lstat(path.join(root, rel)).catch(() => undefined);
    if (st?.isDirectory()) await this.scan(root, rel, leaveOut);
    else {
      for (const k of [...this.folders.keys()]) if (k === rel || k.startsWith(`${rel}/`)) this.folders.delete(k);
      if (!st) for (const k of Object.keys(this.seen)) if (k === rel || k.startsWith(`${rel}/`)) delete this.seen[k];
    }
    if (rel === top) return;
    const folder = this.folders.get(parent)!;
    folder.entries.delete(nameOf(rel));
    if (st?.isDirectory())
      folder.entries.set(nameOf(rel), { mode: "040000", path: nameOf(rel), oid: "", type: "tree" });
    else if (st?.isFile() && !leaveOut.has(rel)) {
      const b = await this.blobOid(path.join(root, rel), rel);
      if (b) folder.entries.set(nameOf(rel), { mode: b.mode, path: nameOf(rel), oid: b.oid, type: "blob" });
    }
    for (let up = parent; ; up = parentOf(up)) {
      delete this.folders.get(up)!.oid;
      if (up === top || !up.includes("/")) break;
    }
  }

  /** The folder's tree: written (from its sub-folders' trees) only when something in it changed. */
  private async oidOf(rel: string): Promise<string> {
    const folder = this.folders.get(rel)!;
    if (folder.oid) return folder.oid;
    const tree: TreeEntry[] = [];
    for (const e of folder.entries.values())
      tree.push(e.type === "tree" ? { ...e, oid: await this.oidOf(`${rel}/${e.path}`) } : e);
    folder.oid = await this.git.writeTree({ fs: gitFs, gitdir: this.gitdir, tree });
    return folder.oid;
  }

  private async blobOid(abs: string, rel: string): Promise<{ oid: string; mode: string } | undefined> {
    count("statted");
    const st = await lstat(abs).catch(() => undefined);
    if (!st?.isFile()) return undefined;
    const mode = st.mode & 0o111 ? "100755" : "100644";
    const hit = this.seen[rel];
    // Hashed within RACY_MS of its mtime, a file may have changed since without changing its stat.
    const racy = hit !== undefined && st.mtimeMs >= (hit.seen_at_ms ?? this.cache.written_at_ms) - RACY_MS;
    if (hit && !racy && hit.size === st.size && hit.mtime_ms === st.mtimeMs && hit.ino === st.ino && hit.mode === mode)
      return { oid: hit.oid, mode };
    count("read");
    const data = await readFile(abs).catch(() => undefined);
    if (!data) return undefined;
    const oid = await this.git.writeBlob({ fs: gitFs, gitdir: this.gitdir, blob: data });
    this.seen[rel] = { size: st.size, mtime_ms: st.mtimeMs, ino: st.ino, mode, oid, seen_at_ms: Date.now() };
    return { oid, mode };
  }
}

/** path (relative to the tree) → blob oid and mode, for every file of a tree. */
async function treeFiles(
  git: Git,
  gitdir: string,
  oid: string,
  prefix = "",
): Promise<Map<string, { oid: string; mode: string }>> {
  const out = new Map<string, { oid: string; mode: string }>();
  const { tree } = await git.readTree({ fs: gitFs, gitdir, oid, cache: readCache() });
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
    const { blob: data } = await git.readBlob({ fs: gitFs, gitdir, oid: blob.oid, cache: readCache() });
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
