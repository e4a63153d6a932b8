/**
 * Reproducible archives of a package directory: entries sorted by POSIX path, package-relative
 * names (no top-level folder), explicit directory entries, fixed timestamps, owner 0/0, and
 * permission bits normalised to 0755 (directories and files with the user-execute bit) or 0644.
 * tar.gz = tar-stream + fflate gzip (mtime 0); tar.zst = tar-stream + zstd; zip = fflate with
 * unix modes in the external attributes. Hard-linked files are stored once in tar (link entries)
 * and in full under each name in zip. Readers for all three serve `relay package verify`.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  createReadStream,
  createWriteStream,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { type Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import * as zlibNs from "node:zlib";
import { createGunzip } from "node:zlib";
import { Gzip, Zip, ZipDeflate, ZipPassThrough } from "fflate";
import * as tar from "tar-stream";
import { err, ok, type Result } from "../util/result.ts";
import { type TreeEntry, walkTree } from "./manifest.ts";
import { zstdCompressStream, zstdDecompressStream } from "./zstd.ts";

export const ARCHIVE_FORMATS = ["tar.gz", "tar.zst", "zip"] as const;
export type ArchiveFormat = (typeof ARCHIVE_FORMATS)[number];

/** 1980-01-01T00:00:00Z: the earliest time zip can store; tar uses the same instant. */
export const FIXED_MTIME_SECONDS = 315532800;
const CHUNK = 1 << 20;

export function archiveFormatOf(file: string): ArchiveFormat | undefined {
  if (file.endsWith(".tar.gz") || file.endsWith(".tgz")) return "tar.gz";
  if (file.endsWith(".tar.zst")) return "tar.zst";
  if (file.endsWith(".zip")) return "zip";
  return undefined;
}

export function parseArchiveFormats(list: string): Result<ArchiveFormat[]> {
  const out: ArchiveFormat[] = [];
  for (const raw of list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const f = raw === "tgz" ? "tar.gz" : raw;
    if (!(ARCHIVE_FORMATS as readonly string[]).includes(f)) {
      return err("bad_archive_format", `unknown archive format '${raw}'; supported: ${ARCHIVE_FORMATS.join(", ")}`);
    }
    if (!out.includes(f as ArchiveFormat)) out.push(f as ArchiveFormat);
  }
  return ok(out);
}

const normMode = (e: TreeEntry): number => (e.type === "dir" || (e.mode & 0o100) !== 0 ? 0o755 : 0o644);

/** Writes `dir` as an archive at `out` (via a temp file and rename). */
export async function writeArchive(
  dir: string,
  out: string,
  format: ArchiveFormat,
): Promise<Result<{ path: string; bytes: number }>> {
  const abs = path.resolve(out);
  const rel = path.relative(path.resolve(dir), abs);
  if (!rel.startsWith("..") && !path.isAbsolute(rel))
    return err("bad_archive_path", `archive ${abs} must be outside the package directory ${dir}`);
  const tree = walkTree(dir);
  if ("error" in tree) return tree;
  mkdirSync(path.dirname(abs), { recursive: true });
  const tmp = `${abs}.tmp-${process.pid}`;
  try {
    if (format === "zip") writeZip(tree.ok, tmp);
    else await writeTar(tree.ok, tmp, format === "tar.gz" ? gzipStream() : zstdCompressStream());
    renameSync(tmp, abs);
  } catch (e) {
    rmSync(tmp, { force: true });
    return err("archive_failed", `cannot write ${abs}: ${(e as Error).message}`);
  }
  return ok({ path: abs, bytes: readSize(abs) });
}

function readSize(file: string): number {
  return statSync(file).size;
}

function gzipStream(): Transform {
  let gz: Gzip | undefined;
  return new Transform({
    construct(cb) {
      gz = new Gzip({ level: 6, mtime: 0 }, (data) => this.push(Buffer.from(data)));
      cb();
    },
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      try {
        gz!.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    flush(cb: TransformCallback) {
      try {
        gz!.push(new Uint8Array(0), true);
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
  });
}

async function writeTar(entries: TreeEntry[], out: string, compressor: Transform): Promise<void> {
  const pack = tar.pack();
  const mtime = new Date(FIXED_MTIME_SECONDS * 1000);
  // The first path of a hard-linked file carries the bytes; later paths are tar "link" entries.
  const firstPathOf = new Map<string, string>();
  const producer = (async () => {
    for (const e of entries) {
      const header = {
        name: e.type === "dir" ? `${e.path}/` : e.path,
        mode: normMode(e),
        mtime,
        uid: 0,
        gid: 0,
        uname: "",
        gname: "",
      };
      if (e.type === "dir") {
        await new Promise<void>((res, rej) =>
          pack.entry({ ...header, type: "directory" }, (x) => (x ? rej(x) : res())),
        );
        continue;
      }
      const linkTo = e.linkKey ? firstPathOf.get(e.linkKey) : undefined;
      if (linkTo) {
        await new Promise<void>((res, rej) =>
          pack.entry({ ...header, type: "link", linkname: linkTo, size: 0 }, (x) => (x ? rej(x) : res())),
        );
        continue;
      }
      if (e.linkKey) firstPathOf.set(e.linkKey, e.path);
      let w: ReturnType<typeof pack.entry> | undefined;
      const done = new Promise<void>((res, rej) => {
        w = pack.entry({ ...header, type: "file", size: e.size }, (x) => (x ? rej(x) : res()));
      });
      await pipeline(createReadStream(e.abs, { highWaterMark: CHUNK }), w as unknown as NodeJS.WritableStream);
      await done;
    }
    pack.finalize();
  })();
  producer.catch((x: unknown) => pack.destroy(x instanceof Error ? x : new Error(String(x))));
  await Promise.all([producer, pipeline(pack as unknown as Readable, compressor, createWriteStream(out))]);
}

function writeZip(entries: TreeEntry[], out: string): void {
  const fd = openSync(out, "w");
  try {
    let failure: Error | undefined;
    const zip = new Zip((e, data) => {
      if (e) failure = e;
      else writeSync(fd, data);
    });
    // DOS times are local wall-clock fields: build the date from local fields so every TZ agrees.
    const mtime = new Date(1980, 0, 1, 0, 0, 0);
    const buf = Buffer.alloc(CHUNK);
    for (const e of entries) {
      const mode = normMode(e);
      if (e.type === "dir") {
        const d = new ZipPassThrough(`${e.path}/`);
        d.mtime = mtime;
        d.os = 3;
        d.attrs = (((0o040000 | mode) << 16) | 0x10) >>> 0;
        zip.add(d);
        d.push(new Uint8Array(0), true);
        continue;
      }
      const f = new ZipDeflate(e.path, { level: 6 });
      f.mtime = mtime;
      f.os = 3;
      f.attrs = ((0o100000 | mode) << 16) >>> 0;
      zip.add(f);
      const src = openSync(e.abs, "r");
      try {
        let pos = 0;
        for (;;) {
          const n = readSync(src, buf, 0, CHUNK, pos);
          pos += n;
          const last = n < CHUNK || pos >= e.size;
          f.push(new Uint8Array(buf.subarray(0, n)), last);
          if (last) break;
        }
      } finally {
        closeSync(src);
      }
      if (failure) throw failure;
    }
    zip.end();
    if (failure) throw failure;
  } finally {
    closeSync(fd);
  }
}

export interface ArchiveEntry {
  path: string;
  type: "file" | "dir";
  mode: number;
  size: number;
  sha256: string;
  /** Modification time in seconds since the epoch, as stored. */
  mtime: number;
  /** The bytes, for entries selected by `readArchive`'s `keep`. */
  data?: Buffer;
  /** tar only: the earlier path this entry is a hard link to (size and sha256 are that file's). */
  linkTo?: string;
}

export type KeepEntry = (path: string) => boolean;

/** Lists an archive's entries with each file's size and sha256 (names without a trailing slash). */
export async function readArchive(file: string, keep: KeepEntry = () => false): Promise<Result<ArchiveEntry[]>> {
  const format = archiveFormatOf(file);
  if (!format) return err("bad_archive_format", `${file}: not a .tar.gz, .tgz, .tar.zst or .zip file`);
  try {
    return ok(
      format === "zip"
        ? readZip(file, keep)
        : await readTar(file, format === "tar.gz" ? createGunzip() : zstdDecompressStream(), keep),
    );
  } catch (e) {
    return err("bad_archive", `cannot read ${file}: ${(e as Error).message}`);
  }
}

async function readTar(file: string, decompress: Transform, keep: KeepEntry): Promise<ArchiveEntry[]> {
  const extract = tar.extract();
  const out: ArchiveEntry[] = [];
  const byPath = new Map<string, ArchiveEntry>();
  const feed = pipeline(createReadStream(file), decompress, extract as unknown as NodeJS.WritableStream);
  const consume = (async () => {
    for await (const entry of extract) {
      const h = entry.header;
      const hash = createHash("sha256");
      const name = h.name.replace(/\/+$/, "");
      if (h.type === "link") {
        entry.resume();
        const target = byPath.get((h.linkname ?? "").replace(/\/+$/, ""));
        if (target?.type !== "file")
          throw new Error(`hard link ${h.name} points at ${h.linkname}, which is not an earlier file`);
        const e: ArchiveEntry = {
          path: name,
          type: "file",
          mode: (h.mode ?? 0) & 0o777,
          size: target.size,
          sha256: target.sha256,
          mtime: Math.floor((h.mtime?.getTime() ?? 0) / 1000),
          linkTo: target.path,
        };
        if (target.data && keep(name)) e.data = target.data;
        out.push(e);
        byPath.set(name, e);
        continue;
      }
      const kept: Buffer[] | undefined = keep(name) ? [] : undefined;
      let size = 0;
      for await (const chunk of entry) {
        hash.update(chunk as Buffer);
        kept?.push(chunk as Buffer);
        size += (chunk as Buffer).length;
      }
      const type = h.type === "directory" ? "dir" : h.type === "file" ? "file" : undefined;
      if (!type) throw new Error(`entry ${h.name} has unsupported type ${h.type}`);
      const e: ArchiveEntry = {
        path: name,
        type,
        mode: (h.mode ?? 0) & 0o777,
        size,
        sha256: hash.digest("hex"),
        mtime: Math.floor((h.mtime?.getTime() ?? 0) / 1000),
        ...(kept ? { data: Buffer.concat(kept) } : {}),
      };
      out.push(e);
      byPath.set(name, e);
    }
  })();
  await Promise.all([feed, consume]);
  return out;
}

function readZip(file: string, keep: KeepEntry): ArchiveEntry[] {
  const b = readFileSync(file);
  let eocd = -1;
  for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 65535); i--) {
    if (b.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error("no zip end-of-central-directory record");
  const count = b.readUInt16LE(eocd + 10);
  let p = b.readUInt32LE(eocd + 16);
  const out: ArchiveEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (b.readUInt32LE(p) !== 0x02014b50) throw new Error(`bad central directory entry ${i}`);
    const method = b.readUInt16LE(p + 10);
    const time = b.readUInt16LE(p + 12);
    const date = b.readUInt16LE(p + 14);
    const crc = b.readUInt32LE(p + 16);
    const csize = b.readUInt32LE(p + 20);
    const usize = b.readUInt32LE(p + 24);
    const nlen = b.readUInt16LE(p + 28);
    const elen = b.readUInt16LE(p + 30);
    const clen = b.readUInt16LE(p + 32);
    const attrs = b.readUInt32LE(p + 38);
    const local = b.readUInt32LE(p + 42);
    const name = b.toString("utf8", p + 46, p + 46 + nlen);
    p += 46 + nlen + elen + clen;
    if (b.readUInt32LE(local) !== 0x04034b50) throw new Error(`bad local header for ${name}`);
    const start = local + 30 + b.readUInt16LE(local + 26) + b.readUInt16LE(local + 28);
    const raw = b.subarray(start, start + csize);
    const data = method === 0 ? raw : method === 8 ? zlibNs.inflateRawSync(raw) : undefined;
    if (!data) throw new Error(`${name}: unsupported compression method ${method}`);
    if (data.length !== usize) throw new Error(`${name}: size ${data.length} != ${usize}`);
    if (crc32(data) !== crc) throw new Error(`${name}: CRC mismatch`);
    const unixMode = attrs >>> 16;
    const isDir = name.endsWith("/") || (unixMode & 0o170000) === 0o040000;
    const mtime =
      Date.UTC(1980 + (date >> 9), ((date >> 5) & 15) - 1, date & 31, time >> 11, (time >> 5) & 63, (time & 31) * 2) /
      1000;
    const clean = name.replace(/\/+$/, "");
    out.push({
      path: clean,
      type: isDir ? "dir" : "file",
      mode: unixMode & 0o777,
      size: data.length,
      sha256: createHash("sha256").update(data).digest("hex"),
      mtime,
      ...(keep(clean) ? { data: Buffer.from(data) } : {}),
    });
  }
  return out;
}

let crcTable: Uint32Array | undefined;
function crc32(data: Uint8Array): number {
  // Native where the runtime has it (Bun, Deno, Node >= 22.2); the table loop is the fallback.
  const nativeCrc = (zlibNs as unknown as { crc32?: (d: Uint8Array) => number }).crc32;
  if (typeof nativeCrc === "function") return nativeCrc(data) >>> 0;
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = crcTable[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
