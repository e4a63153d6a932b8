/**
 * Vendor tokens that a terminal (or `fold`) wrapped across lines: `ghp_ABC…` at the end of one
 * line and the rest of it at the start of the next, each part too short for its rule. The parts
 * are joined, the token rules run on the join, and every part of a match is redacted where it
 * stands, so the text keeps its lines.
 */
import { replaceSpans, TOKEN_PREFIX, TOKEN_RULES, type Rule, type Span } from "./redact-rules.ts";

/** Characters a token is made of (JWTs have dots, some keys base64's `+/=`). */
const TOKEN_CHAR = /[A-Za-z0-9_.+/=-]/;
/** A line break, raw or JSON-escaped, followed by a token character. */
const BREAK = /^(?:\r?\n|\\r\\n|\\n)(?=[A-Za-z0-9_.+/=-])/;
/** A token prefix and what follows it up to the end of its line. */
const SEED = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_.+/=-]*(?=\\r?\\n|\\\\r\\\\n|\\\\n)`, "g");
/** A token wraps over this many lines at most. */
const MAX_PARTS = 12;

interface Part {
  /** Where the part stands in the text. */
  start: number;
  end: number;
  /** Where it starts in the joined token. */
  at: number;
}

/** Matches of the token rules in `s` that the rule would redact, as [start, end). */
function tokenMatches(s: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const rule of TOKEN_RULES) {
    for (const m of s.matchAll(rule.re)) if (redacts(rule, m[0])) out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

function redacts(rule: Rule, match: string): boolean {
  return typeof rule.replace === "string" || rule.replace(match) !== match;
}

/** A token ending exactly at the end of `s`: the next line need not belong to it. */
function isComplete(s: string): boolean {
  return tokenMatches(s).some(([, end]) => end === s.length);
}

/** Random-looking: letters with digits, or mixed case after the first letter (`README` and `Done` are words). */
function looksLikeTokenText(s: string): boolean {
  return (/\d/.test(s) && /[A-Za-z]/.test(s)) || (/[a-z]/.test(s) && /[A-Z]/.test(s.slice(1)));
}

/** The run of token characters from `i`. */
function runEnd(text: string, i: number): number {
  let j = i;
  while (j < text.length && TOKEN_CHAR.test(text[j]!)) j++;
  return j;
}

/** The first part (from `start` to its line's end) and the lines that continue it. */
function partsFrom(text: string, start: number, end: number): Part[] {
  const parts: Part[] = [{ start, end, at: 0 }];
  let joined = text.slice(start, end);
  let at = end;
  while (parts.length < MAX_PARTS) {
    const br = BREAK.exec(text.slice(at, at + 5))?.[0];
    if (br === undefined) break;
    const from = at + br.length;
    const to = runEnd(text, from);
    const piece = text.slice(from, to);
    // A complete token followed by a word is not wrapped; an incomplete one takes what follows.
    if (isComplete(joined) && !looksLikeTokenText(piece)) break;
    parts.push({ start: from, end: to, at: joined.length });
    joined += piece;
    at = to;
  }
  return parts;
}

/** The text ranges of `parts` that the joined range [from, to) covers. */
function rangesOf(parts: Part[], from: number, to: number): Span[] {
  const out: Span[] = [];
  for (const p of parts) {
    const lo = Math.max(from, p.at);
    const hi = Math.min(to, p.at + (p.end - p.start));
    if (lo < hi) out.push({ start: p.start + lo - p.at, end: p.start + hi - p.at });
  }
  return out;
}

/** Tokens that a match finds only across a line break. */
function wrappedSpans(text: string): Span[] {
  const spans: Span[] = [];
  SEED.lastIndex = 0;
  for (let m = SEED.exec(text); m !== null; m = SEED.exec(text)) {
    const parts = partsFrom(text, m.index, m.index + m[0].length);
    if (parts.length < 2) continue;
    const joined = parts.map((p) => text.slice(p.start, p.end)).join("");
    for (const [from, to] of tokenMatches(joined)) {
      const ranges = rangesOf(parts, from, to);
      if (ranges.length > 1) spans.push(...ranges);
    }
    SEED.lastIndex = Math.max(SEED.lastIndex, parts.at(-1)!.end);
  }
  return spans;
}

/** `text` with every token that a line break splits redacted, part by part. */
export function redactWrappedTokens(text: string): string {
  return replaceSpans(text, wrappedSpans(text));
}
