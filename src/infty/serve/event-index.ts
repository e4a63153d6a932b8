/**
 * Where each line of an append-only events.jsonl starts, built as the file grows: a refresh reads
 * only the bytes appended since the last one, so page N of 100 000 events is one read of that
 * page's bytes, not a scan. A line counts once its newline is written (a line being appended, or
 * torn by a crash, waits). A file that shrank, or another file put in its place, is indexed
 * again from the start.
 */

import { Buffer } from "node:buffer";
import { open, stat } from "node:fs/promises";

const CHUNK = 1 << 16;

export class EventLogIndex {
  /** Byte offset of line i's start; starts[count] is where the next line will start. */
  private starts: number[] = [0];
  private refreshing: Promise<number> | undefined;
  /** The indexed file's inode: another file put in its place is indexed from the start. */
  private ino = 0;
  /** Goes up each time the index starts over: what a reader folded from the old file is void. */
  generation = 0;
  private readonly listeners = new Set<(count: number) => void>();

  constructor(readonly file: string) {}

  /** Complete lines indexed so far. */
  get count(): number {
    return this.starts.length - 1;
  }

  /** Reads what was appended since the last call (one at a time); the number of lines now. */
  refresh(): Promise<number> {
    this.refreshing ??= this.readAppended().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** Called with the new count whenever a refresh finds new lines. */
  onGrow(fn: (count: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private async readAppended(): Promise<number> {
    const { size, ino } = await stat(this.file).catch(() => ({ size: 0, ino: 0 }));
    const indexed = this.starts.at(-1)!;
    if (size < indexed || ino !== this.ino) {
      this.starts = [0];
      this.generation++;
    }
    this.ino = ino;
    const at = this.starts.at(-1)!;
    if (size <= at) return this.count;
    const first = this.count;
    const fh = await open(this.file, "r");
    try {
      const buf = Buffer.alloc(CHUNK);
      for (let pos = at; pos < size; ) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, size - pos), pos);
        if (bytesRead === 0) break;
        for (let i = 0; i < bytesRead; i++) if (buf[i] === 0x0a) this.starts.push(pos + i + 1);
        pos += bytesRead;
      }
    } finally {
      await fh.close();
    }
    if (this.count > first) for (const fn of this.listeners) fn(this.count);
    return this.count;
  }

  /** The text of lines [from, from + limit), as far as they are indexed. */
  async read(from: number, limit: number): Promise<string[]> {
    const end = Math.min(this.count, from + limit);
    if (from >= end) return [];
    const start = this.starts[from]!;
    const stop = this.starts[end]!;
    const fh = await open(this.file, "r");
    try {
      const buf = Buffer.alloc(stop - start);
      await fh.read(buf, 0, buf.length, start);
      const text = buf.toString("utf8");
      // Each line ends with its newline: drop the last (empty) piece.
      return text.split("\n").slice(0, end - from);
    } finally {
      await fh.close();
    }
  }
}
