/**
 * Reading a run's events.jsonl from its end: the last N lines without reading a days-long log
 * whole, and following it as lines are appended (`relay infty logs --follow`). A line is only
 * given out once its newline is there, so a line being written (or torn by a crash) is never
 * printed in pieces.
 */
import { Buffer } from "node:buffer";
import { open, stat } from "node:fs/promises";

const CHUNK = 1 << 16;

/** The last `n` whole lines of `file` and the offset its reading ended at (its size then). */
export async function tailLines(file: string, n: number): Promise<{ lines: string[]; end: number }> {
  const fh = await open(file, "r").catch(() => undefined);
  if (!fh) return { lines: [], end: 0 };
  try {
    const size = (await fh.stat()).size;
    let start = size;
    const chunks: Buffer[] = [];
    let newlines = 0;
    // Enough newlines for n lines (n + 1: the first piece may be a cut line), or the whole file.
    while (start > 0 && newlines <= n) {
      const from = Math.max(0, start - CHUNK);
      const buf = Buffer.alloc(start - from);
      await fh.read(buf, 0, buf.length, from);
      chunks.unshift(buf);
      newlines += count(buf, 0x0a);
      start = from;
    }
    const text = Buffer.concat(chunks);
    let lines = text.toString("utf8").split("\n");
    lines.pop(); // after the last newline: empty, or a line still being written
    if (start > 0) lines = lines.slice(1);
    return { lines: lines.filter(Boolean).slice(-n), end: size };
  } finally {
    await fh.close();
  }
}

function count(buf: Buffer, byte: number): number {
  let c = 0;
  for (let i = buf.indexOf(byte); i !== -1; i = buf.indexOf(byte, i + 1)) c++;
  return c;
}

/** The whole lines of `file` from its last to its first (a last line without its newline is left out); nothing for a missing file. */
export async function* linesFromEnd(file: string): AsyncGenerator<string> {
  const fh = await open(file, "r").catch(() => undefined);
  if (!fh) return;
  try {
    let end = (await fh.stat()).size;
    /** Bytes of a line whose start lies before the part read so far. */
    let rest = Buffer.alloc(0);
    /** Until the file's last newline is found, what is read belongs to a line still being written. */
    let torn = true;
    while (end > 0) {
      const from = Math.max(0, end - CHUNK);
      const buf = Buffer.alloc(end - from);
      await fh.read(buf, 0, buf.length, from);
      end = from;
      const data = Buffer.concat([buf, rest]);
      let stop = data.length;
      if (torn) {
        stop = data.lastIndexOf(0x0a);
        if (stop === -1) {
          rest = from > 0 ? data : Buffer.alloc(0);
          continue;
        }
        torn = false;
      }
      for (let nl = data.lastIndexOf(0x0a, stop - 1); nl !== -1; nl = data.lastIndexOf(0x0a, stop - 1)) {
        if (nl + 1 < stop) yield data.subarray(nl + 1, stop).toString("utf8");
        stop = nl;
      }
      rest = data.subarray(0, stop);
    }
    if (!torn && rest.length) yield rest.toString("utf8");
  } finally {
    await fh.close();
  }
}

export interface FollowOptions {
  /** Where to start reading (the end of what was printed already). */
  from: number;
  onLine: (line: string) => void;
  /** Asked when nothing new came for a while: a reason to stop (the run is no longer driven), or undefined. */
  idle: () => Promise<string | undefined>;
  /** true for the line that ends the follow (a run_finished). */
  last: (line: string) => boolean;
  pollMs?: number;
  /** Polls without new lines between two `idle` questions. */
  idleEvery?: number;
}

/** Gives out each whole line appended after `from` until `last` says so or `idle` gives a reason (returned). */
export async function followLines(file: string, o: FollowOptions): Promise<string> {
  let offset = o.from;
  // Bytes after the last newline: split by bytes, so a character cut by a read is kept whole.
  let carry = Buffer.alloc(0);
  let quiet = 0;
  for (;;) {
    const size = (await stat(file).catch(() => ({ size: offset }))).size;
    if (size < offset) {
      offset = 0; // replaced by a shorter file: read it from its start
      carry = Buffer.alloc(0);
    }
    if (size > offset) {
      quiet = 0;
      const bytes = Buffer.concat([carry, await readRange(file, offset, size)]);
      offset = size;
      const end = bytes.lastIndexOf(0x0a);
      carry = bytes.subarray(end + 1);
      for (const line of bytes
        .subarray(0, end + 1)
        .toString("utf8")
        .split("\n")
        .filter(Boolean)) {
        o.onLine(line);
        if (o.last(line)) return "the run finished";
      }
    } else if (++quiet >= (o.idleEvery ?? 20)) {
      quiet = 0;
      const stop = await o.idle();
      if (stop) return stop;
    }
    await new Promise((r) => setTimeout(r, o.pollMs ?? 250));
  }
}

async function readRange(file: string, from: number, to: number): Promise<Buffer> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(to - from);
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
