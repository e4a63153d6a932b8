/** Random material for the fake secrets of the corpus (test/memories/secret-corpus*.ts). */
import { randomBytes } from "node:crypto";

export const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
export const LOWER = "abcdefghijklmnopqrstuvwxyz";
export const DIGITS = "0123456789";
export const ALNUM = UPPER + LOWER + DIGITS;
export const B64 = ALNUM + "+/";
export const URLSAFE = ALNUM + "_-";
export const HEX = "0123456789abcdef";

/** `n` random characters of `alphabet`, always with one of each class the alphabet has (like real keys). */
export function rand(alphabet: string, n: number): string {
  for (;;) {
    let s = "";
    for (const b of randomBytes(n * 2)) {
      if (s.length === n) break;
      if (b < 256 - (256 % alphabet.length)) s += alphabet[b % alphabet.length];
    }
    if (s.length < n) continue;
    const classes = [UPPER, LOWER, DIGITS].filter((c) => [...alphabet].some((x) => c.includes(x)));
    if (n < 12 || classes.every((c) => [...s].some((x) => c.includes(x)))) return s;
  }
}

/** Vendor prefixes are joined at run time so that no file matches a credential scanner. */
export const p = (...parts: string[]) => parts.join("");

/** A password-like value with symbols (no quotes, spaces or `&`). */
export function password(n = 14): string {
  return rand(ALNUM, n - 2) + "#!".slice(0, 2);
}
