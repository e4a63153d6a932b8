/**
 * keep_full_output: what the executor keeps of a process's output beyond its 1 MiB head+tail
 * buffer, so that an orchestrator can save the whole text of a result that was cut for the
 * model. A spool starts only when the buffer is about to drop bytes (until then the buffer holds
 * everything); all spools and held texts share one budget (64 MiB), and past it the rest of a
 * segment is counted as dropped, its last bytes still coming from the buffer's tail.
 */

import { Buffer } from "node:buffer";
import { randomHex } from "../util/random.ts";
import { err, ok, type Result } from "../util/result.ts";
import type { HeadTailBuffer } from "./head-tail-buffer.ts";
import * as L from "./limits.ts";

/** The shared budget and the full texts held until they are read. */
export class FullOutputStore {
  private used = 0;
  private readonly held = new Map<string, Buffer>();

  constructor(
    readonly limitBytes: number = L.FULL_OUTPUT_MAX_BYTES,
    private readonly maxHeld: number = L.MAX_HELD_FULL_OUTPUTS,
  ) {}

  /** How many of `n` bytes fit the budget; they count as used until released. */
  reserve(n: number): number {
    const take = Math.max(0, Math.min(n, this.limitBytes - this.used));
    this.used += take;
    return take;
  }

  release(n: number): void {
    this.used = Math.max(0, this.used - n);
  }

  /** Holds a full text for `read`; the oldest held text goes when too many wait. */
  hold(text: string): { id: string; bytes: number } {
    const data = Buffer.from(text, "utf8");
    const id = randomHex(8);
    this.held.set(id, data);
    this.used += data.length;
    while (this.held.size > this.maxHeld) this.drop(this.held.keys().next().value!);
    return { id, bytes: data.length };
  }

  /** A piece of a held text; the piece that reaches its end lets it go. */
  read(
    id: string,
    offset: number,
    maxBytes: number,
  ): Result<{ data_base64: string; next_offset: number; done: boolean }, "unknown_output"> {
    const data = this.held.get(id);
    if (!data)
      return err(
        "unknown_output",
        `no full output ${id} is held here (it was read to its end, or let go for newer ones)`,
      );
    const end = Math.min(data.length, offset + maxBytes);
    const piece = data.subarray(Math.min(offset, end), end).toString("base64");
    if (end >= data.length) this.drop(id);
    return ok({ data_base64: piece, next_offset: end, done: end >= data.length });
  }

  private drop(id: string): void {
    const data = this.held.get(id);
    if (!data) return;
    this.held.delete(id);
    this.release(data.length);
  }

  clear(): void {
    this.held.clear();
    this.used = 0;
  }
}

/** One process's output since its last poll, kept once it outgrows the head+tail buffer. */
export class OutputSpool {
  private chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private active = false;

  constructor(private readonly store: FullOutputStore) {}

  /** Call before `buffer.push(chunk)`: the first chunk that would make the buffer drop starts the spool. */
  push(chunk: Uint8Array, buffer: HeadTailBuffer): void {
    if (!this.active) {
      if (buffer.retainedBytes + chunk.length <= buffer.maxBytes) return;
      this.active = true;
      this.add(buffer.peek());
    }
    this.add(chunk);
  }

  private add(b: Uint8Array): void {
    // Once anything is dropped the spool is a prefix: later bytes would leave a hole.
    const take = this.dropped > 0 ? 0 : this.store.reserve(b.length);
    if (take > 0) this.chunks.push(Buffer.from(b.subarray(0, take)));
    this.kept += take;
    this.dropped += b.length - take;
  }

  /** The segment's bytes (a prefix of it when `dropped` > 0), or undefined if it fit the buffer; empties the spool. */
  take(): { bytes: Buffer; dropped: number } | undefined {
    if (!this.active) return undefined;
    const out = { bytes: Buffer.concat(this.chunks), dropped: this.dropped };
    this.store.release(this.kept);
    this.chunks = [];
    this.kept = 0;
    this.dropped = 0;
    this.active = false;
    return out;
  }
}

export interface SpooledText {
  /** Raw bytes in order; a gap of `gapBytes` lies between `head` and `tail`. */
  head: Uint8Array;
  tail: Uint8Array;
  gapBytes: number;
}

/**
 * A spooled segment as text pieces: `held` (UTF-8 bytes kept back from the last poll), the
 * spool, and, when the spool had to stop, the part of the buffer's tail that came after it.
 * `keepBack` bytes at the very end (an incomplete character of a running process) are left for the next poll.
 */
export function spooledPieces(
  held: Uint8Array,
  spooled: { bytes: Buffer; dropped: number },
  bufferTail: Uint8Array,
  keepBack: number,
): SpooledText {
  const head = Buffer.concat([held, spooled.bytes]);
  if (spooled.dropped === 0)
    return { head: head.subarray(0, Math.max(0, head.length - keepBack)), tail: new Uint8Array(0), gapBytes: 0 };
  const after = bufferTail.subarray(Math.max(0, bufferTail.length - spooled.dropped));
  return {
    head,
    tail: after.subarray(0, Math.max(0, after.length - keepBack)),
    gapBytes: spooled.dropped - after.length,
  };
}
