/**
 * Frame codec: 4-byte big-endian payload length, then that many bytes of UTF-8 JSON.
 * The decoder only concatenates once a whole frame has arrived (a concat per chunk is
 * 3-5x slower for large frames).
 *
 * What is fatal and what is not: a header announcing more than the limit cannot be skipped
 * safely (it is usually text printed into the stream, or a desync), and a stream that ends
 * inside a frame lost that frame: both end the stream. A well-delimited frame whose payload is
 * empty, not UTF-8, not JSON or nested deeper than MAX_NESTING is reported as `invalid_json`
 * and the stream stays in sync.
 */
import { Buffer } from "node:buffer";
import { err, ok, type Result } from "../util/result.ts";

export const DEFAULT_FRAME_LIMIT = 16 * 1024 * 1024;
export const HEADER_BYTES = 4;
/** A u32 header cannot say more than this, whatever the configured limit. */
export const MAX_FRAME_LIMIT = 0xffff_ffff;
/**
 * Deepest nesting of arrays and objects a payload may have. JSON.parse copes with far more, but
 * re-serialising such a value overflows the stack, and in Bun that overflow takes over a second
 * to unwind: a peer could stall us with a 200 KB frame. serde_json stops at 128.
 */
export const MAX_NESTING = 1000;

export function encodeFrame(value: unknown, limit = DEFAULT_FRAME_LIMIT): Result<Buffer> {
  const json = stringifyMessage(value);
  if ("error" in json) return json;
  const size = Buffer.byteLength(json.ok, "utf8");
  if (size > limit) {
    return err(
      "frame_too_large",
      `frame of ${size} bytes exceeds the ${limit}-byte limit; nothing was sent (raise the limit with --frame-limit or send less)`,
      { size, limit },
    );
  }
  const buf = Buffer.allocUnsafe(HEADER_BYTES + size);
  buf.writeUInt32BE(size, 0);
  buf.write(json.ok, HEADER_BYTES, "utf8");
  return ok(buf);
}

/**
 * JSON text of a message. A bigint (a u64 request id above 2^53-1) is written as a plain number
 * token; only a message that holds one pays for the replacer.
 */
export function stringifyMessage(value: unknown): Result<string> {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    // A bigint is a TypeError; anything else (nesting too deep: RangeError) fails the same way again.
    if (e instanceof TypeError) return stringifyWithBigints(value);
    return err("invalid_message", `message is not JSON-serialisable: ${(e as Error).message}`);
  }
  if (json === undefined) return err("invalid_message", "message is not JSON-serialisable: undefined");
  return ok(json);
}

function stringifyWithBigints(value: unknown): Result<string> {
  // A bigint becomes a tagged string first; the tag (NUL + a random nonce) cannot occur in the
  // message by chance, so replacing the tagged strings touches nothing else.
  const nonce = Math.random().toString(36).slice(2, 12);
  const tag = `\u0000u64:${nonce}:`;
  let json: string | undefined;
  try {
    json = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${tag}${v.toString()}` : v));
  } catch (e) {
    return err("invalid_message", `message is not JSON-serialisable: ${(e as Error).message}`);
  }
  if (json === undefined) return err("invalid_message", "message is not JSON-serialisable: undefined");
  return ok(json.replace(new RegExp(`"\\\\u0000u64:${nonce}:(-?[0-9]+)"`, "g"), "$1"));
}

export type DecodedFrame =
  /** `text` is the payload as decoded, for reading the exact request id (contracts/wire-id.ts). */
  | { kind: "frame"; value: unknown; text: string; bytes: number }
  /**
   * The frame was well delimited but its payload is empty, not UTF-8 or not JSON: skipped, the
   * stream is still in sync. `text` is the payload read leniently, for recovering an id.
   */
  | { kind: "invalid_json"; message: string; text: string; bytes: number }
  /** The stream cannot be trusted any more (length over the limit: garbage or a desync). */
  | { kind: "fatal"; code: string; message: string };

export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = -1; // payload length of the frame in progress, -1 while reading a header
  private failed = false;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private readonly lenient = new TextDecoder("utf-8");

  constructor(readonly limit = DEFAULT_FRAME_LIMIT) {}

  /** Bytes held for an incomplete frame (0 between frames). */
  get pendingBytes(): number {
    return this.buffered + (this.need >= 0 ? HEADER_BYTES : 0);
  }

  push(chunk: Uint8Array): DecodedFrame[] {
    if (this.failed) return [];
    if (chunk.length === 0) return [];
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
    this.buffered += chunk.length;
    const out: DecodedFrame[] = [];
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < HEADER_BYTES) break;
        const header = this.take(HEADER_BYTES);
        const size = header.readUInt32BE(0);
        if (size > this.limit) {
          this.failed = true;
          this.chunks = [];
          this.buffered = 0;
          out.push({ kind: "fatal", code: "frame_too_large", message: describeBadHeader(header, size, this.limit) });
          return out;
        }
        this.need = size;
      }
      if (this.buffered < this.need) break;
      const payload = this.take(this.need);
      this.need = -1;
      out.push(this.parse(payload));
    }
    return out;
  }

  /** Call at end of stream: a non-empty remainder is a truncated frame. */
  finish(): DecodedFrame | undefined {
    if (this.failed || (this.buffered === 0 && this.need < 0)) return undefined;
    const have = this.buffered;
    const message =
      this.need < 0
        ? `stream ended inside a frame header (${have} of 4 bytes)`
        : `stream ended inside a frame (${have} of ${this.need} payload bytes)`;
    this.chunks = [];
    this.buffered = 0;
    this.need = -1;
    this.failed = true;
    return { kind: "fatal", code: "truncated_frame", message };
  }

  private parse(payload: Buffer): DecodedFrame {
    const bytes = payload.length;
    if (bytes === 0)
      return {
        kind: "invalid_json",
        message: "the frame payload is empty (a frame carries one JSON message)",
        text: "",
        bytes,
      };
    let text: string;
    try {
      text = this.decoder.decode(payload);
    } catch {
      return {
        kind: "invalid_json",
        message: "the frame payload is not valid UTF-8",
        text: this.lenient.decode(payload),
        bytes,
      };
    }
    // Each level takes two bytes at least: only a long payload can be too deep.
    if (bytes > 2 * MAX_NESTING && nestsDeeperThan(text, MAX_NESTING)) {
      return {
        kind: "invalid_json",
        message: `the frame payload nests arrays and objects deeper than ${MAX_NESTING} levels`,
        text,
        bytes,
      };
    }
    try {
      return { kind: "frame", value: JSON.parse(text), text, bytes };
    } catch (e) {
      return { kind: "invalid_json", message: `the frame payload is not JSON: ${(e as Error).message}`, text, bytes };
    }
  }

  private take(n: number): Buffer {
    // A zero-length frame may end exactly at a chunk boundary: there is no chunk to take from.
    if (n === 0) return Buffer.alloc(0);
    const first = this.chunks[0]!;
    if (first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const want = n - filled;
      if (c.length <= want) {
        c.copy(out, filled);
        filled += c.length;
        this.chunks.shift();
      } else {
        c.copy(out, filled, 0, want);
        this.chunks[0] = c.subarray(want);
        filled += want;
      }
    }
    this.buffered -= n;
    return out;
  }
}

/** A huge length usually means something wrote plain text into the protocol stream. */
function describeBadHeader(header: Buffer, size: number, limit: number): string {
  const printable = [...header].every((b) => b === 0x0a || b === 0x0d || b === 0x09 || (b >= 0x20 && b < 0x7f));
  const hint = printable
    ? ` The header bytes read as text ${JSON.stringify(header.toString("latin1"))}: the other side probably printed to stdout instead of speaking the framed protocol.`
    : "";
  return `frame header announces ${size} bytes, over the ${limit}-byte limit; the connection is closed.${hint}`;
}

/** Whether `[`/`{` nest deeper than `limit` outside strings; one pass, strings skipped by indexOf. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = closingQuote(text, i);
      if (i < 0) return false; // unterminated: JSON.parse reports it
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** Index of the quote closing the string that opens at `i`, or -1. */
function closingQuote(text: string, i: number): number {
  for (let j = i + 1; ; ) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; text.charCodeAt(k) === 0x5c; k--) backslashes++;
    if (backslashes % 2 === 0) return q;
    j = q + 1;
  }
}
