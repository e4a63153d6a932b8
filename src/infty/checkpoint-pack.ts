/**
 * When the checkpoints' repository is packed (git-pack.ts does the packing): once PACK_LOOSE
 * loose objects have piled up, the objects of the newest checkpoints go into a pack, each one a
 * delta of the same path's version in the checkpoint before where that is smaller; once more
 * than MERGE_PACKS packs exist, everything is packed again into one. The driver does it after a
 * checkpoint, while the run goes on; the next checkpoint waits for it.
 */
import { CHECKPOINT_REF } from "./checkpoint-format.ts";
import { buildPack, looseObjects, mergePacks, type PackObject, packs, readForPack, writePack } from "./git-pack.ts";
import { type Git, gitFs } from "./git-store.ts";

/** Loose objects past which the newest are packed. */
export const PACK_LOOSE = 256;
/** Packs past which all are merged into one. */
export const MERGE_PACKS = 8;

interface Walked {
  /** Every object the walked checkpoints hold, in the order first met (commits oldest first). */
  order: string[];
  /** An object → the same path's object in the checkpoint before. */
  bases: Map<string, string>;
}

/** The objects of a tree: every tree and blob, each with the object at its path in `before`. */
async function walkTree(
  git: Git,
  gitdir: string,
  cache: object,
  oid: string,
  before: string | undefined,
  w: Walked,
  seen: Set<string>,
): Promise<void> {
  if (seen.has(oid)) return;
  seen.add(oid);
  w.order.push(oid);
  if (before && before !== oid && !w.bases.has(oid)) w.bases.set(oid, before);
  const { tree } = await git.readTree({ fs: gitFs, gitdir, oid, cache });
  const old = before
    ? new Map((await git.readTree({ fs: gitFs, gitdir, oid: before, cache })).tree.map((e) => [e.path, e]))
    : new Map();
  for (const e of tree) {
    const prev = old.get(e.path)?.type === e.type ? old.get(e.path)!.oid : undefined;
    if (e.type === "tree") await walkTree(git, gitdir, cache, e.oid, prev, w, seen);
    else if (e.type === "blob" && !seen.has(e.oid)) {
      seen.add(e.oid);
      w.order.push(e.oid);
      if (prev && prev !== e.oid) w.bases.set(e.oid, prev);
    }
  }
}

/** The checkpoints from the newest back while `take(commit)` holds, oldest first, with what they hold. */
async function walkCheckpoints(
  git: Git,
  gitdir: string,
  cache: object,
  take: (commit: string) => boolean,
): Promise<Walked> {
  const commits: Array<{ oid: string; tree: string; parent?: string }> = [];
  let oid: string | undefined = await git.resolveRef({ fs: gitFs, gitdir, ref: CHECKPOINT_REF }).catch(() => undefined);
  while (oid && take(oid)) {
    const { commit } = await git.readCommit({ fs: gitFs, gitdir, oid, cache });
    commits.unshift({ oid, tree: commit.tree, parent: commit.parent[0] });
    oid = commit.parent[0];
  }
  const w: Walked = { order: [], bases: new Map() };
  const seen = new Set<string>();
  for (const c of commits) {
    const before = c.parent
      ? (await git.readCommit({ fs: gitFs, gitdir, oid: c.parent, cache })).commit.tree
      : undefined;
    w.order.push(c.oid);
    await walkTree(git, gitdir, cache, c.tree, before, w, seen);
  }
  return w;
}

/**
 * Packs the repository if it is due: the loose objects, each a delta of the same path's object
 * in the checkpoint before where that is smaller (the bases found by walking back the
 * checkpoints whose commits are loose). When packs pile up, they are merged with the loose
 * objects into one: their entries are copied as they are, and the loose objects may then be
 * deltas of packed ones. Nothing is dropped, reachable or not (the stat cache may name a blob
 * no checkpoint holds yet). What was done, or undefined when nothing was due.
 */
export async function packIfDue(
  git: Git,
  gitdir: string,
  force = false,
): Promise<{ objects: number; merged: boolean } | undefined> {
  const loose = await looseObjects(gitdir);
  const existing = await packs(gitdir);
  if (loose.length === 0 || (!force && loose.length < PACK_LOOSE)) return undefined;
  const merge = existing.length + 1 > MERGE_PACKS;
  // Its own cache: what is read of packs for a pack is let go with it (a driver keeps no pack in memory).
  const cache = {};
  const looseSet = new Set(loose);
  const walked = await walkCheckpoints(git, gitdir, cache, (c) => looseSet.has(c));
  const inOrder = [...new Set([...walked.order.filter((o) => looseSet.has(o)), ...loose])];
  // An object that cannot be read stops the packing before anything is removed.
  const objects: PackObject[] = [];
  for (const oid of inOrder)
    objects.push({ ...(await readForPack(git, gitdir, oid, cache)), base: walked.bases.get(oid) });
  const built = merge
    ? await mergePacks(gitdir, existing, objects, async (oid) => (await readForPack(git, gitdir, oid, cache)).data)
    : buildPack(objects);
  await writePack(gitdir, built, loose, merge ? existing : []);
  return { objects: objects.length, merged: merge };
}
