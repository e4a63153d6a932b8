/**
 * Vendor tokens that a terminal (or `fold`) wrapped across lines: `ghp_ABC…` at the end of one
 * line and the rest of it at the start of the next, each part too short for its rule. The parts
 * are joined, the token rules run on the join, and every part of a match is redacted where it
 * stands, so the text keeps its lines.
 */
import { replaceSpans, type Span, TOKEN_PREFIX, TOKEN_RULES, type TokenRule } from "./redact-rules.ts";

/** Characters a token is made of (JWTs have dots, some keys base64's `+/=`). */
const TOKEN_CHAR = /[A-Za-z0-9_.+/=-]/;
/** A line break, raw or JSON-escaped, followed by a token character. */
const BREAK = /^(?:\r?\n|\\r\\n|\\n)(?=[A-Za-z0-9_.+/=-])/;
/** A token prefix and what follows it up to the end of its line. */
const SEED = new RegExp(`${TOKEN_PREFIX}[A-Za-z0-9_.+/=-]*(?=\\r?\\n|\\\\r\\\\n|\\\\n)`, "g");
/** A line that starts a token of its own. */
const STARTS_TOKEN = new RegExp(`^${TOKEN_PREFIX}`);
/** A token wraps over this many lines at most. */
const MAX_PARTS = 12;

interface Part extends Span {
  /** Where it starts in the joined token. */
  at: number;
}

/** The length of the token that `s` starts with, by the first of `rules` that would redact it (0: none). */
function tokenLength(s: string, rules: TokenRule[]): number {
  for (const rule of rules) {
    const m = rule.whole.exec(s);
    if (m && !rule.keep?.(m[0])) return m[0].length;
  }
  return 0;
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
function partsFrom(text: string, start: number, end: number, rules: TokenRule[]): Part[] {
  const parts: Part[] = [{ start, end, at: 0 }];
  let joined = text.slice(start, end);
  let at = end;
  while (parts.length < MAX_PARTS) {
    const br = BREAK.exec(text.slice(at, at + 5))?.[0];
    if (br === undefined) break;
    const from = at + br.length;
    const to = runEnd(text, from);
    const piece = text.slice(from, to);
    if (STARTS_TOKEN.test(piece)) break;
    // A complete token followed by a word is not wrapped; an incomplete one takes what follows.
    if (tokenLength(joined, rules) === joined.length && !looksLikeTokenText(piece)) break;
    parts.push({ start: from, end: to, at: joined.length });
    joined += piece;
    at = to;
  }
  return parts;
}

/** The text ranges of `parts` that the first `length` characters of the joined token cover. */
function rangesOf(parts: Part[], length: number): Span[] {
  const out: Span[] = [];
  for (const p of parts) {
    const hi = Math.min(length, p.at + (p.end - p.start));
    if (p.at < hi) out.push({ start: p.start, end: p.start + hi - p.at });
  }
  return out;
}

/** Tokens that a rule finds only across a line break. */
function wrappedSpans(text: string): Span[] {
  const spans: Span[] = [];
  SEED.lastIndex = 0;
  for (let m = SEED.exec(text); m !== null; m = SEED.exec(text)) {
    const rules = TOKEN_RULES.filter((r) => r.starts.test(m![0]));
    const parts = partsFrom(text, m.index, m.index + m[0].length, rules);
    if (parts.length < 2) continue;
    const ranges = rangesOf(parts, tokenLength(parts.map((p) => text.slice(p.start, p.end)).join(""), rules));
    if (ranges.length > 1) spans.push(...ranges);
    SEED.lastIndex = Math.max(SEED.lastIndex, parts.at(-1)!.end);
  }
  return spans;
}

/** `text` with every token that a line break splits redacted, part by part. */
export function redactWrappedTokens(text: string): string {
  return replaceSpans(text, wrappedSpans(text));
}
