/**
 * What the parser of shell-parse.ts reads the source by: blanks, the characters that end a word,
 * the reserved words (and those it does not model), an assignment's prefix, and the looks ahead
 * for a reserved word, a redirection and a bracket that closes within its word.
 */

import { bracketCloses } from "./shell-ast.ts";

export const BLANK = new Set([" ", "\t"]);
/** Characters that end an unquoted word. */
export const META = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);
const KEYWORDS = new Set([
  "{",
  "}",
  "!",
  "if",
  "then",
  "elif",
  "else",
  "fi",
  "while",
  "until",
  "do",
  "done",
  "for",
  "in",
  "case",
  "esac",
  "select",
  "function",
  "coproc",
]);
export const NOT_MODELLED = new Set(["case", "select", "function", "coproc"]);
export const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/;

/** A reserved word at `pos`, if one stands there as a whole word. */
export function keywordAt(src: string, pos: number): string | undefined {
  let j = pos;
  while (j < src.length && !META.has(src.charAt(j)) && !`'"\\$\``.includes(src.charAt(j))) j++;
  const word = src.slice(pos, j);
  const next = src.charAt(j);
  if (next !== "" && !META.has(next)) return undefined;
  return KEYWORDS.has(word) ? word : undefined;
}

/** A redirection starts at `pos`: `[n]<`, `[n]>`, `&>`, but not `<(` or `>(`. */
export function redirectAt(src: string, pos: number): boolean {
  let j = pos;
  while (/[0-9]/.test(src.charAt(j))) j++;
  const c = src.charAt(j);
  if (c === "&") return j === pos && src.charAt(j + 1) === ">";
  return (c === "<" || c === ">") && src.charAt(j + 1) !== "(";
}

/**
 * Whether the `open` just read is a glob bracket or a brace expansion, within this word (up to
 * the next unquoted metacharacter).
 */
export function closesInWord(src: string, pos: number, open: "[" | "{"): boolean {
  let end = pos;
  while (end < src.length && !META.has(src.charAt(end))) end++;
  return bracketCloses(src, pos, end, open);
}
