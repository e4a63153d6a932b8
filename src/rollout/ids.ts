/**
 * UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids and the rollout
 * filenames that embed them sort by creation time. Within one millisecond a 12-bit counter in
 * `rand_a` keeps ids from this process strictly increasing.
 */
import { fillRandom } from "../util/random.ts";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

let lastMs = -1;
let counter = 0;

export function uuidv7(nowMs: number = Date.now()): string {
  const bytes = new Uint8Array(16);
  fillRandom(bytes);
  let ms = Math.max(0, Math.floor(nowMs));
  if (ms <= lastMs) {
    // Same (or a backwards-stepping) clock: continue from the previous id instead.
    ms = lastMs;
    counter++;
    if (counter > 0xfff) {
      ms++;
      counter = 0;
    }
  } else {
    // Start each millisecond in the lower half so the counter has room to grow.
    counter = (((bytes[6]! & 0x0f) << 8) | bytes[7]!) & 0x7ff;
  }
  lastMs = ms;
  // 48-bit big-endian timestamp; split because bitwise ops are 32-bit.
  const hi = Math.floor(ms / 2 ** 32);
  const lo = ms >>> 0;
  bytes[0] = (hi >>> 8) & 0xff;
  bytes[1] = hi & 0xff;
  bytes[2] = (lo >>> 24) & 0xff;
  bytes[3] = (lo >>> 16) & 0xff;
  bytes[4] = (lo >>> 8) & 0xff;
  bytes[5] = lo & 0xff;
  bytes[6] = 0x70 | (counter >>> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Creation time (Unix ms) of a UUIDv7; undefined for other UUID versions. */
export function uuidv7Time(id: string): number | undefined {
  if (!isUuid(id) || id[14] !== "7") return undefined;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
