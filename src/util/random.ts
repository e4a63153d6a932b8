/**
 * Random ids from the Web Crypto global (Bun, Node and Deno all have it). Importing node:crypto
 * costs a compiled relay process 4–5 ms, and every executor, sandbox helper and session would
 * pay it at start for a few random bytes (docs/performance.md).
 */

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

/** Fills `buf` with random bytes. */
export function fillRandom(buf: Uint8Array): void {
  globalThis.crypto.getRandomValues(buf);
}

export function randomUUID(): string {
  return globalThis.crypto.randomUUID();
}

/** A uniform integer in [min, max). */
export function randomInt(min: number, max: number): number {
  const span = max - min;
  if (!Number.isInteger(min) || !Number.isInteger(max) || span <= 0 || span > 2 ** 32)
    throw new RangeError(`randomInt: bad range [${min}, ${max})`);
  // Rejection sampling: drop the top values that would make some results likelier than others.
  const limit = 2 ** 32 - (2 ** 32 % span);
  const word = new Uint32Array(1);
  for (;;) {
    globalThis.crypto.getRandomValues(word);
    if (word[0]! < limit) return min + (word[0]! % span);
  }
}

interface BunHasher {
  update(data: string | Uint8Array): BunHasher;
  digest(encoding: "hex"): string;
}
type BunCrypto = { CryptoHasher: new (algorithm: string) => BunHasher };

/**
 * A hex digest of `data`. Under Bun, its own native hasher: a first use of node:crypto costs
 * about 8 ms in a compiled binary (it loads Node's stream modules), and every executor and
 * container init hashes confine.c as it starts. Elsewhere node:crypto, loaded on the first call
 * (getBuiltinModule is synchronous), not when the importing module does.
 */
export function hashHex(algorithm: "sha1" | "sha256", data: string | Uint8Array): string {
  const bun = (globalThis as { Bun?: BunCrypto }).Bun;
  if (bun) return new bun.CryptoHasher(algorithm).update(data).digest("hex");
  const crypto = process.getBuiltinModule("node:crypto") as typeof import("node:crypto");
  return crypto.createHash(algorithm).update(data).digest("hex");
}
