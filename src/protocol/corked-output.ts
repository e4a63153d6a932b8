/**
 * A peer's outgoing byte stream: each frame is written at once, or held while corked and then
 * written together with the others as one chunk (the other side wakes once for several
 * messages). A write that throws is reported, and the frame counts as not written.
 */
import { Buffer } from "node:buffer";
import type { ByteSink } from "./byte-stream.ts";

export class CorkedOutput {
  /** Frames held while corked (see cork()); written together as one chunk. */
  private held: Buffer[] | undefined;
  private corks = 0;

  constructor(
    private readonly output: ByteSink,
    /** Called with the error's message when a write throws. */
    private readonly onWriteError: (message: string) => void,
  ) {}

  cork(): void {
    this.corks++;
    this.held ??= [];
  }

  /** True between cork() and the matching uncork(). */
  get corked(): boolean {
    return this.corks > 0;
  }

  uncork(): void {
    if (this.corks === 0) return;
    if (--this.corks === 0) {
      this.flush();
      this.held = undefined;
    }
  }

  /** Writes the frames held by cork() now, without ending the cork. */
  flush(): void {
    const held = this.held;
    if (!held || held.length === 0) return;
    this.held = [];
    this.write(held.length === 1 ? held[0]! : Buffer.concat(held));
  }

  /** Writes a frame, or holds it while corked; false when the write failed. */
  emit(frame: Buffer): boolean {
    if (this.held) {
      this.held.push(frame);
      return true;
    }
    return this.write(frame);
  }

  /** Writes what is held (e.g. the last answers before a deliberate close) and ends every cork. */
  uncorkAll(): void {
    if (this.held?.length) this.write(Buffer.concat(this.held));
    this.held = undefined;
    this.corks = 0;
  }

  /** Ends the stream (already destroyed is fine). */
  end(): void {
    try {
      this.output.end();
    } catch {
      // already destroyed
    }
  }

  private write(bytes: Buffer): boolean {
    try {
      this.output.write(bytes);
      return true;
    } catch (e) {
      this.onWriteError((e as Error).message);
      return false;
    }
  }
}
