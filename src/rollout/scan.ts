/**
 * Counting the lines of one type in a rollout without parsing it: a byte search for
 * `"type":"<type>"`. Inside a JSON string a quote is escaped (`\"`), so the unescaped marker
 * only occurs as a key and its value, which in a rollout line is the line's own type.
 * Bounded: it reads at most `maxBytes` and then says the count is a lower bound.
 */
import { Buffer } from "node:buffer";
import { open } from "node:fs/promises";

/** Bytes read at a time (exported for the tests of markers across its edges). */
export const SCAN_CHUNK = 256 * 1024;

export interface LineTypeCount {
  count: number;
  /** Byte offset of the start of the last such line, if any. */
  lastLineAt?: number;
  /** False when the file is longer than the bound: `count` is then a lower bound. */
  complete: boolean;
}

/** Counts `type` lines in the first `maxBytes` of `file`. Throws on I/O errors. */
export async function countLinesOfType(file: string, type: string, maxBytes: number): Promise<LineTypeCount> {
  const marker = Buffer.from(`"type":${JSON.stringify(type)}`, "utf8");
  const keep = marker.length - 1;
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(SCAN_CHUNK + keep);
    let carried = 0;
    /** File offset of buf[0]. */
    let base = 0;
    let lastNewline = -1;
    const out: LineTypeCount = { count: 0, complete: true };
    for (;;) {
      const room = Math.min(SCAN_CHUNK, maxBytes - (base + carried));
      if (room <= 0) {
        out.complete = (await fh.stat()).size <= maxBytes;
        break;
      }
      const { bytesRead } = await fh.read(buf, carried, room, base + carried);
      if (bytesRead === 0) break;
      const n = carried + bytesRead;
      const view = buf.subarray(0, n);
      for (let i = view.indexOf(marker); i !== -1; i = view.indexOf(marker, i + marker.length)) {
        out.count++;
        const nl = view.lastIndexOf(0x0a, i);
        out.lastLineAt = nl !== -1 ? base + nl + 1 : lastNewline + 1;
      }
      const nl = view.lastIndexOf(0x0a);
      if (nl !== -1) lastNewline = base + nl;
      // The last `keep` bytes may hold the start of a marker: search them again with the next chunk.
      const tail = Math.min(keep, n);
      buf.copy(buf, 0, n - tail, n);
      base += n - tail;
      carried = tail;
    }
    return out;
  } finally {
    await fh.close();
  }
}

/** The line that starts at byte `offset`, if it ends (newline or end of file) within `maxBytes`. Throws on I/O errors. */
export async function readLineAt(file: string, offset: number, maxBytes: number): Promise<string | undefined> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(maxBytes);
    const { bytesRead } = await fh.read(buf, 0, maxBytes, offset);
    const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
    const end = nl !== -1 ? nl : bytesRead < maxBytes ? bytesRead : -1;
    return end === -1 ? undefined : buf.subarray(0, end).toString("utf8");
  } finally {
    await fh.close();
  }
}
