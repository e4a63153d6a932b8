/**
 * Bounded output buffer that keeps the beginning and the end of a stream: the first half of
 * the budget fills with the earliest bytes, later bytes go to a tail that drops its oldest
 * bytes. The error that ends a long build is in the tail; the command's banner is in the head.
 */
import { Buffer } from "node:buffer";

export class HeadTailBuffer {
  private readonly headBudget: number;
  private readonly tailBudget: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private omitted = 0;

  constructor(readonly maxBytes: number) {
    this.headBudget = Math.floor(maxBytes / 2);
    this.tailBudget = maxBytes - this.headBudget;
  }

  /** Bytes currently held. */
  get retainedBytes(): number {
    return this.headBytes + this.tailBytes;
  }

  /** Bytes dropped from the middle since the last drain. */
  get omittedBytes(): number {
    return this.omitted;
  }

  push(chunk: Uint8Array): void {
    let data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (data.length === 0) return;
    if (this.maxBytes === 0) {
      this.omitted += data.length;
      return;
    }
    const headRoom = this.headBudget - this.headBytes;
    if (headRoom > 0) {
      const take = Math.min(headRoom, data.length);
      // Copy: the caller may reuse its read buffer.
      this.head.push(Buffer.from(data.subarray(0, take)));
      this.headBytes += take;
      data = data.subarray(take);
      if (data.length === 0) return;
    }
    if (data.length >= this.tailBudget) {
      this.omitted += this.tailBytes + data.length - this.tailBudget;
      this.tail = [Buffer.from(data.subarray(data.length - this.tailBudget))];
      this.tailBytes = this.tailBudget;
      return;
    }
    this.tail.push(Buffer.from(data));
    this.tailBytes += data.length;
    while (this.tailBytes > this.tailBudget) {
      const first = this.tail[0]!;
      const excess = this.tailBytes - this.tailBudget;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.omitted += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.omitted += excess;
      }
    }
  }

  /** Everything held, head then tail, without changing the buffer. */
  peek(): Buffer {
    return Buffer.concat([...this.head, ...this.tail]);
  }

  /** Returns what is held and empties the buffer (so a later drain never repeats it). */
  drain(): { bytes: Buffer; omittedBytes: number; headBytes: number } {
    const out = { bytes: this.peek(), omittedBytes: this.omitted, headBytes: this.headBytes };
    this.head = [];
    this.tail = [];
    this.headBytes = 0;
    this.tailBytes = 0;
    this.omitted = 0;
    return out;
  }
}
