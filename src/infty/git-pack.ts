/**
 * Packs the checkpoints' repository: loose objects become one packfile (git's format, version
 * 2, with its .idx), each object stored as a delta against the previous version of the same
 * path where that is smaller (a folder's tree that gained one entry, an appended file), so a
 * days-long run keeps one copy of its store plus its changes, in a few files instead of tens of
 * thousands. isomorphic-git (and git itself) read the packs; only relay writes them.
 *
 * The deltas are git's own instructions (copy a range of the base, insert bytes), found by the
 * longest common prefix and suffix of the two versions: what a handoff's changes look like. A
 * pack holds its delta bases itself (git's rule for a pack on disk), so a chain starts with a
 * whole object in every pack; when packs pile up they are merged into one.
 *
 * Crash safety: the pack and its index are written to temp names, fsynced and renamed (the
 * index last: a pack is used only once its index exists); only then are the objects it now
 * holds removed. A crash in between leaves duplicates, which git and isomorphic-git accept.
 */
import { Buffer } from "node:buffer";
import { readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { deflateSync } from "node:zlib";
import { fsyncDir, writeFileAtomic } from "./durable.ts";
import { type Git, gitFs } from "./git-store.ts";

const TYPES = { commit: 1, tree: 2, blob: 3, tag: 4 } as const;
const OFS_DELTA = 6;
/** Deltas on deltas at most this deep (reading an object applies its whole chain). */
const MAX_DEPTH = 20;

export interface PackObject {
  oid: string;
  type: keyof typeof TYPES;
  data: Uint8Array;
  /** The object to store this one as a delta of, if it is in the same pack and the delta is smaller. */
  base?: string;
}

/** git's variable-length sizes in delta headers: 7 bits a byte, low first. */
function varint(n: number, out: number[]): void {
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
}

/** A copy instruction: `size` bytes of the base from `offset` (only non-zero bytes are written). */
function copyOp(offset: number, size: number, out: number[]): void {
  const bytes: number[] = [];
  let flags = 0x80;
  for (let i = 0; i < 4; i++) {
    const b = Math.floor(offset / 256 ** i) & 0xff;
    if (b) (flags |= 1 << i), bytes.push(b);
  }
  for (let i = 0; i < 3; i++) {
    const b = Math.floor(size / 256 ** i) & 0xff;
    if (b) (flags |= 0x10 << i), bytes.push(b);
  }
  out.push(flags, ...bytes);
}

function copy(offset: number, size: number, out: number[]): void {
  for (let done = 0; done < size; done += 0xffffff) copyOp(offset + done, Math.min(0xffffff, size - done), out);
}

/** Bytes a copy must cover to be worth its instruction; also the length of the blocks the base is indexed by. */
const BLOCK = 16;

function insert(bytes: Uint8Array, out: number[]): void {
  for (let i = 0; i < bytes.length; i += 127) {
    const chunk = bytes.subarray(i, Math.min(i + 127, bytes.length));
    out.push(chunk.length);
    for (const b of chunk) out.push(b);
  }
}

/**
 * git's delta from `base` to `target`: copies of what the target shares with the base, inserts
 * of the rest. The base's BLOCK-byte blocks are indexed; the target is scanned for them, and
 * each match is grown both ways. What a handoff changes (an entry added in a sorted list, a
 * time stamp, lines appended) comes out as a few copies and short inserts.
 */
export function delta(base: Uint8Array, target: Uint8Array): Buffer {
  const key = (buf: Uint8Array, at: number) => Buffer.from(buf.buffer, buf.byteOffset + at, BLOCK).toString("latin1");
  const blocks = new Map<string, number>();
  for (let at = 0; at + BLOCK <= base.length; at += BLOCK)
    if (!blocks.has(key(base, at))) blocks.set(key(base, at), at);
  const out: number[] = [];
  varint(base.length, out);
  varint(target.length, out);
  let pending = 0;
  let i = 0;
  while (i + BLOCK <= target.length) {
    const at = blocks.get(key(target, i));
    if (at === undefined) {
      i++;
      continue;
    }
    // Grow the match back over bytes still pending, then forward as far as both go.
    let from = at;
    let to = i;
    while (from > 0 && to > pending && base[from - 1] === target[to - 1]) from--, to--;
    let len = i - to + BLOCK;
    while (from + len < base.length && to + len < target.length && base[from + len] === target[to + len]) len++;
    insert(target.subarray(pending, to), out);
    copy(from, len, out);
    i = pending = to + len;
  }
  insert(target.subarray(pending), out);
  return Buffer.from(out);
}

/** An entry's header: its type and size (4 bits in the first byte, then 7 a byte). */
function entryHeader(type: number, size: number): number[] {
  const out = [(type << 4) | (size & 0x0f)];
  let n = Math.floor(size / 16);
  while (n > 0) {
    out[out.length - 1]! |= 0x80;
    out.push(n & 0x7f);
    n = Math.floor(n / 128);
  }
  return out;
}

/** An OFS_DELTA's distance back to its base, in git's encoding (each further byte adds one). */
function ofsBytes(distance: number): number[] {
  const out = [distance & 0x7f];
  let n = Math.floor(distance / 128);
  while (n > 0) {
    n -= 1;
    out.unshift(0x80 | (n & 0x7f));
    n = Math.floor(n / 128);
  }
  return out;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// node:crypto is loaded on the first pack written, not when the driver starts (util/random.ts says why).
const sha1 = (...parts: Uint8Array[]) => {
  const h = (process.getBuiltinModule("node:crypto") as typeof import("node:crypto")).createHash("sha1");
  for (const p of parts) h.update(p);
  return h.digest();
};

/** A pack being written: entries appended, each delta after its base (git's OFS_DELTA points back). */
class PackWriter {
  private readonly parts: Buffer[] = [];
  private offset = 12;
  readonly offsets = new Map<string, number>();
  private readonly crcs = new Map<string, number>();
  private readonly depths = new Map<string, number>();

  has(oid: string): boolean {
    return this.offsets.has(oid);
  }

  private push(oid: string, head: number[], body: Uint8Array, depth: number): void {
    const entry = Buffer.concat([Buffer.from(head), body]);
    this.offsets.set(oid, this.offset);
    this.crcs.set(oid, crc32(entry));
    this.depths.set(oid, depth);
    this.parts.push(entry);
    this.offset += entry.length;
  }

  /** An object, as a delta of `base` (already in this pack) where that is smaller, else whole. */
  add(o: PackObject, baseData: Uint8Array | undefined): void {
    if (this.has(o.oid)) return;
    const baseDepth = o.base && this.has(o.base) ? this.depths.get(o.base)! : MAX_DEPTH;
    const d = baseData && baseDepth < MAX_DEPTH ? delta(baseData, o.data) : undefined;
    if (d && d.length < o.data.length / 2)
      this.push(
        o.oid,
        [...entryHeader(OFS_DELTA, d.length), ...ofsBytes(this.offset - this.offsets.get(o.base!)!)],
        deflateSync(d),
        baseDepth + 1,
      );
    else this.push(o.oid, entryHeader(TYPES[o.type], o.data.length), deflateSync(o.data), 0);
  }

  /** An entry of another pack, its compressed body as it is (a delta is pointed at its base's copy here). */
  addRaw(oid: string, type: number, size: number, body: Uint8Array, base: string | undefined): void {
    if (this.has(oid)) return;
    if (type === OFS_DELTA) {
      if (!base || !this.has(base)) throw new Error(`object ${oid} is a delta of an object not in the pack`);
      this.push(
        oid,
        [...entryHeader(OFS_DELTA, size), ...ofsBytes(this.offset - this.offsets.get(base)!)],
        body,
        this.depths.get(base)! + 1,
      );
    } else this.push(oid, entryHeader(type, size), body, 0);
  }

  finish(): { pack: Buffer; idx: Buffer; sha: string } {
    const header = Buffer.alloc(12);
    header.write("PACK", 0, "latin1");
    header.writeUInt32BE(2, 4);
    header.writeUInt32BE(this.parts.length, 8);
    const body = Buffer.concat([header, ...this.parts]);
    const checksum = sha1(body);
    return {
      pack: Buffer.concat([body, checksum]),
      idx: buildIdx([...this.offsets.keys()], this.offsets, this.crcs, checksum),
      sha: checksum.toString("hex"),
    };
  }
}

/** The objects in an order where each base comes before the objects stored as its deltas. */
function basesFirst(objects: PackObject[]): PackObject[] {
  const byOid = new Map(objects.map((o) => [o.oid, o]));
  const ordered: PackObject[] = [];
  const placed = new Set<string>();
  for (const first of objects) {
    // The chain of bases down from `first`, each placed before the one that needs it.
    const chain: PackObject[] = [];
    for (
      let o: PackObject | undefined = first;
      o && !placed.has(o.oid) && !chain.includes(o);
      o = o.base ? byOid.get(o.base) : undefined
    )
      chain.push(o);
    for (const o of chain.reverse()) placed.add(o.oid), ordered.push(o);
  }
  return ordered;
}

/** Adds `objects` (each a delta of its base where that is in the pack and smaller). */
function addObjects(w: PackWriter, objects: PackObject[], dataOf: (oid: string) => Uint8Array | undefined): void {
  for (const o of basesFirst(objects)) w.add(o, o.base && w.has(o.base) ? dataOf(o.base) : undefined);
}

/** The pack and its index for `objects` (bases first, deltas where smaller). */
export function buildPack(objects: PackObject[]): { pack: Buffer; idx: Buffer; sha: string } {
  const w = new PackWriter();
  const byOid = new Map(objects.map((o) => [o.oid, o.data]));
  addObjects(w, objects, (oid) => byOid.get(oid));
  return w.finish();
}

/** Each entry of a pack: its id, type, size and compressed body (delta entries with their base's id). */
function* packEntries(
  pack: Buffer,
  idx: Buffer,
): Generator<{ oid: string; type: number; size: number; body: Buffer; base?: string }> {
  const n = idx.readUInt32BE(8 + 255 * 4);
  const ids = 8 + 256 * 4;
  const offsetsAt = ids + n * 24;
  const byOffset = new Map<number, string>();
  for (let i = 0; i < n; i++)
    byOffset.set(idx.readUInt32BE(offsetsAt + i * 4), idx.toString("hex", ids + i * 20, ids + i * 20 + 20));
  const starts = [...byOffset.keys()].sort((a, b) => a - b);
  for (let i = 0; i < starts.length; i++) {
    const start = starts[i]!;
    const end = i + 1 < starts.length ? starts[i + 1]! : pack.length - 20;
    let at = start;
    let byte = pack[at++]!;
    const type = (byte >> 4) & 7;
    let size = byte & 0x0f;
    for (let shift = 4; byte & 0x80; shift += 7) size += ((byte = pack[at++]!) & 0x7f) * 2 ** shift;
    let base: string | undefined;
    if (type === OFS_DELTA) {
      byte = pack[at++]!;
      let distance = byte & 0x7f;
      while (byte & 0x80) distance = (distance + 1) * 128 + ((byte = pack[at++]!) & 0x7f);
      base = byOffset.get(start - distance);
    } else if (type === 7) throw new Error("a pack with REF_DELTA entries (not written by relay) cannot be merged");
    yield { oid: byOffset.get(start)!, type, size, body: pack.subarray(at, end), base };
  }
}

/**
 * One pack of the packs named (their entries copied as they are, no object inflated) and the
 * loose `objects` (each a delta of its base where that is in the pack: loose or packed).
 */
export async function mergePacks(
  gitdir: string,
  idxNames: string[],
  objects: PackObject[],
  dataOf: (oid: string) => Promise<Uint8Array>,
): Promise<{ pack: Buffer; idx: Buffer; sha: string }> {
  const w = new PackWriter();
  for (const name of idxNames) {
    const idx = await readFile(path.join(gitdir, "objects", "pack", name));
    const pack = await readFile(path.join(gitdir, "objects", "pack", name.replace(/\.idx$/, ".pack")));
    for (const e of packEntries(pack, idx)) w.addRaw(e.oid, e.type, e.size, e.body, e.base);
  }
  const loose = new Map(objects.map((o) => [o.oid, o.data]));
  // A base already packed is read back for its delta (rare: a path's first change since the last pack).
  const bases = new Map<string, Uint8Array>();
  for (const o of objects) if (o.base && !loose.has(o.base) && w.has(o.base)) bases.set(o.base, await dataOf(o.base));
  addObjects(w, objects, (oid) => loose.get(oid) ?? bases.get(oid));
  return w.finish();
}

/** The .idx (version 2) of a pack: fan-out, sorted ids, CRCs, offsets, the pack's and its own checksum. */
function buildIdx(oids: string[], offsets: Map<string, number>, crcs: Map<string, number>, packSha: Buffer): Buffer {
  const sorted = [...oids].sort();
  const n = sorted.length;
  const buf = Buffer.alloc(8 + 256 * 4 + n * (20 + 4 + 4) + 20);
  buf.writeUInt32BE(0xff744f63, 0);
  buf.writeUInt32BE(2, 4);
  let at = 8;
  for (let b = 0, i = 0; b < 256; b++) {
    while (i < n && parseInt(sorted[i]!.slice(0, 2), 16) <= b) i++;
    buf.writeUInt32BE(i, at);
    at += 4;
  }
  for (const oid of sorted) at += buf.write(oid, at, "hex");
  for (const oid of sorted) at = buf.writeUInt32BE(crcs.get(oid)!, at);
  for (const oid of sorted) at = buf.writeUInt32BE(offsets.get(oid)!, at);
  packSha.copy(buf, at);
  at += 20;
  return Buffer.concat([buf.subarray(0, at), sha1(buf.subarray(0, at))]);
}

/** The loose objects' ids. */
export async function looseObjects(gitdir: string): Promise<string[]> {
  const out: string[] = [];
  const objects = path.join(gitdir, "objects");
  for (const d of await readdir(objects).catch(() => [] as string[])) {
    if (!/^[0-9a-f]{2}$/.test(d)) continue;
    for (const f of await readdir(path.join(objects, d)).catch(() => [] as string[]))
      if (/^[0-9a-f]{38}$/.test(f)) out.push(d + f);
  }
  return out;
}

/** The pack files (their .idx names) of the repository. */
export async function packs(gitdir: string): Promise<string[]> {
  return (await readdir(path.join(gitdir, "objects", "pack")).catch(() => [] as string[])).filter((f) =>
    f.endsWith(".idx"),
  );
}

/**
 * Writes a built pack, then removes what it replaces: the loose objects `loose` and the packs
 * named in `replacing`. The pack's id.
 */
export async function writePack(
  gitdir: string,
  built: { pack: Buffer; idx: Buffer; sha: string },
  loose: string[],
  replacing: string[],
): Promise<string> {
  const { pack, idx, sha } = built;
  const dir = path.join(gitdir, "objects", "pack");
  await writeFileAtomic(path.join(dir, `pack-${sha}.pack`), pack);
  await writeFileAtomic(path.join(dir, `pack-${sha}.idx`), idx);
  for (const old of replacing) {
    if (old === `pack-${sha}.idx`) continue;
    await rm(path.join(dir, old), { force: true });
    await rm(path.join(dir, old.replace(/\.idx$/, ".pack")), { force: true });
  }
  for (const oid of loose) await rm(path.join(gitdir, "objects", oid.slice(0, 2), oid.slice(2)), { force: true });
  await fsyncDir(dir);
  return sha;
}

/** Reads an object (loose or packed) as a pack entry's content. */
export async function readForPack(git: Git, gitdir: string, oid: string, cache: object): Promise<PackObject> {
  const o = await git.readObject({ fs: gitFs, gitdir, oid, format: "content", cache });
  if (!(o.type in TYPES)) throw new Error(`object ${oid} is a ${o.type}, which a checkpoint never holds`);
  return { oid, type: o.type as PackObject["type"], data: o.object as Uint8Array };
}
