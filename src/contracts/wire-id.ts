/**
 * Request ids are u64 on the wire, but JSON.parse rounds integers above 2^53-1. The exact id is
 * read back from the raw text: `scanEnvelopeHead` finds the top-level "type" and "id" of a
 * message without parsing it (also in a payload that is not valid JSON, so that a broken
 * request can still be answered), and `idFromToken` turns the id's number token into a number
 * (up to 2^53-1) or a bigint (up to 2^64-1). Both are iterative: a payload nested 100k deep
 * costs a loop, not a stack. `restoreExactId` puts the exact id back into a parsed message.
 */

export const MAX_REQUEST_ID = (1n << 64n) - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
/** A key longer than this (raw, with escapes) cannot spell "type" or "id". */
const MAX_INTERESTING_KEY = 32;

export interface EnvelopeHead {
  /** The last top-level "type" string before the end or the first syntax error. */
  type?: string;
  /** The raw text of the last top-level "id" number token. */
  idToken?: string;
}

/** The exact request id a number token stands for, or undefined when it is not an integer in [0, 2^64). */
export function idFromToken(token: string): number | bigint | undefined {
  if (!/^(?:0|[1-9][0-9]{0,19})$/.test(token)) return undefined;
  const n = BigInt(token);
  if (n > MAX_REQUEST_ID) return undefined;
  return n <= MAX_SAFE ? Number(n) : n;
}

export function scanEnvelopeHead(text: string): EnvelopeHead {
  const head: EnvelopeHead = {};
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 0x7b /* { */) return head;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === 0x7d /* } */) return head;
  for (;;) {
    if (text.charCodeAt(i) !== 0x22 /* " */) return head;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return head;
    const key = keyEnd - i <= MAX_INTERESTING_KEY ? decodeString(text.slice(i, keyEnd)) : undefined;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a /* : */) return head;
    i = skipSpace(text, i + 1);
    const valueEnd = skipValue(text, i);
    if (valueEnd < 0) return head;
    if (key === "id") head.idToken = isNumberStart(text.charCodeAt(i)) ? text.slice(i, valueEnd) : undefined;
    if (key === "type") head.type = text.charCodeAt(i) === 0x22 ? decodeString(text.slice(i, valueEnd)) : undefined;
    i = skipSpace(text, valueEnd);
    const c = text.charCodeAt(i);
    if (c !== 0x2c /* , */) return head; // `}` ends the object; anything else is a syntax error
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    i++;
  }
}

function isNumberStart(c: number): boolean {
  return c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39);
}

/** Index just past the string literal opening at `i`, or -1 when it is unterminated. */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; text.charCodeAt(k) === 0x5c; k--) backslashes++;
    if (backslashes % 2 === 0) return q + 1;
    j = q + 1;
  }
}

function decodeString(literal: string): string | undefined {
  if (!literal.includes("\\")) return literal.slice(1, -1);
  try {
    const s: unknown = JSON.parse(literal);
    return typeof s === "string" ? s : undefined;
  } catch {
    return undefined;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /true|false|null/y;

/** Index just past the JSON value starting at `i`, or -1. Containers are matched by depth only. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22) return stringEnd(text, i);
  if (c === 0x7b || c === 0x5b) return containerEnd(text, i);
  const re = isNumberStart(c) ? NUMBER : LITERAL;
  re.lastIndex = i;
  return re.test(text) ? re.lastIndex : -1;
}

function containerEnd(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x22) {
      const end = stringEnd(text, j);
      if (end < 0) return -1;
      j = end - 1;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/** JSON.parse rounds ids above 2^53-1: put back the exact one from the raw text (the schema still checks it). */
export function restoreExactId(value: unknown, text: string): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  const v = value as { id?: unknown };
  if (typeof v.id !== "number" || Number.isSafeInteger(v.id)) return;
  const token = scanEnvelopeHead(text).idToken;
  const exact = token === undefined ? undefined : idFromToken(token);
  if (exact !== undefined) v.id = exact;
}
