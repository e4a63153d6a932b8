/**
 * Crash-safe file writes for the run store. A SIGKILL (or power loss) at any instant leaves a
 * replaced file either old or new, never empty or half written, and an append-only JSONL file
 * with at most its last line torn, which the next append terminates instead of gluing onto it.
 */
import { Buffer } from "node:buffer";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { z } from "zod";

let tmpCounter = 0;

/**
 * Makes folder `dir` if it is not there, but never its parents: a store whose own folder is gone
 * (a network filesystem unmounted) must not be made again by a write into it.
 */
export async function makeDirIn(dir: string): Promise<void> {
  await mkdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "EEXIST") throw e;
  });
}

/** fsyncs a folder so that a rename inside it survives a power loss too (no-op where unsupported). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch {
    // Windows and some file systems cannot fsync a directory; a rename is still atomic there.
  } finally {
    await fh?.close().catch(() => {});
  }
}

/** The run store's own files are owner-only (a new file's mode; the umask can only take more away). */
const PRIVATE_FILE_MODE = 0o600;

/** Replaces `file` with `value` as JSON: temp file in the same folder, fsync, rename, fsync of the folder. */
export async function writeJsonAtomic(
  file: string,
  value: unknown,
  opts: { beforeRename?: () => Promise<void> } = {},
): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + "\n", opts);
}

/**
 * Replaces `file` with `data` the same way: a reader sees the old bytes or the new ones, never a
 * part. `sync: false` leaves out both fsyncs: the file is still whole or absent after a crash of the
 * process, but a power loss may lose it (for caches, or files the caller fsyncs later in a batch).
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: {
    mode?: number;
    sync?: boolean;
    /** Runs once the new bytes are on disk, right before they replace the file; a throw keeps the old file. */
    beforeRename?: () => Promise<void>;
  } = {},
): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${++tmpCounter}`;
  const fh = await open(tmp, "w", opts.mode ?? PRIVATE_FILE_MODE);
  try {
    await fh.writeFile(data);
    if (opts.sync !== false) await fh.sync();
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await opts.beforeRename?.();
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await rename(tmp, file);
  if (opts.sync !== false) await fsyncDir(path.dirname(file));
}

/** fsyncs files written with `sync: false`, and their folders, all at once (the disk merges them). */
export async function fsyncAll(files: Iterable<string>): Promise<void> {
  const list = [...files];
  const syncFile = async (f: string) => {
    const fh = await open(f, "r");
    await fh.sync().finally(() => fh.close());
  };
  await Promise.all([...list.map(syncFile), ...[...new Set(list.map((f) => path.dirname(f)))].map(fsyncDir)]);
}

/** Removes temp files an interrupted `writeJsonAtomic` left next to `file`. */
export async function removeStaleTemps(file: string): Promise<void> {
  const base = `${path.basename(file)}.tmp-`;
  const names = await readdir(path.dirname(file)).catch(() => [] as string[]);
  for (const n of names) if (n.startsWith(base)) await rm(path.join(path.dirname(file), n), { force: true });
}

/**
 * Appends one line; if the file ends in a torn line (a crash mid-append), that line is terminated
 * first. A write that fails part way (a full disk) is taken back off the file and thrown.
 */
export async function appendLine(file: string, line: string): Promise<void> {
  const fh = await open(file, "a+", PRIVATE_FILE_MODE);
  try {
    const { size } = await fh.stat();
    let lead = "";
    if (size > 0) {
      const last = Buffer.alloc(1);
      await fh.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) lead = "\n";
    }
    try {
      await fh.appendFile(`${lead}${line}\n`);
    } catch (e) {
      await fh.truncate(size).catch(() => undefined);
      throw e;
    }
  } finally {
    await fh.close();
  }
}

/** The lines of an append-only JSONL file that match `schema`; a line torn by a crash (or foreign) is skipped. */
export async function readJsonl<T extends z.ZodType>(file: string, schema: T): Promise<z.output<T>[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  const out: z.output<T>[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const r = schema.safeParse(JSON.parse(line));
      if (r.success) out.push(r.data);
    } catch {
      // torn by a crash mid-append
    }
  }
  return out;
}
