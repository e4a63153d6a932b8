/**
 * Makes the promises a cell's `async` functions and `import()` return visible to the rejection
 * tracker (vm-tracker.ts TRACKER_SOURCE). QuickJS creates them from the intrinsic Promise, and this
 * build of quickjs-emscripten has no host rejection tracker, so the source is rewritten:
 *   async function f(a) { B }   →  function f(a) { return __relayTrack((async () => { B })()); }
 *   async (a) => { B }          →  (a) => { return __relayTrack((async () => { B })()); }
 *   async (a) => E              →  (a) => __relayTrack((async () => E)())
 *   async m(a) { B }            →  m(a) { return __relayTrack((async () => { B })()); }
 *   import(x)                   →  __relayTrack(import(x))
 * The inner arrow keeps `this`, `arguments`, `super` and `new.target` of the function. Only
 * insertions and the removal of `async` are made; a source the tokenizer cannot read, or whose
 * rewrite does not compile (the caller checks), runs as written.
 */
import { type Token, tokenize } from "./js-tokens.ts";

export const TRACK_FN = "__relayTrack";

interface Edit {
  at: number;
  /** Characters removed from `at`. */
  remove: number;
  insert: string;
}

/** The rewritten source, or the source itself when there is nothing to do or it cannot be read. */
export function trackAsync(src: string): string {
  if (!/\basync\b|\bimport\s*\(/.test(src)) return src;
  const tokens = tokenize(src);
  if (!tokens) return src;
  const edits: Edit[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== "name" || tokens[i - 1]?.text === ".") continue;
    if (t.text === "import" && tokens[i + 1]?.text === "(") edits.push(...wrapCall(tokens, i));
    else if (t.text === "async" && !tokens[i + 1]?.newlineBefore) edits.push(...asyncEdits(tokens, i));
  }
  return apply(src, edits);
}

/** `import(...)` → `__relayTrack(import(...))`. */
function wrapCall(tokens: Token[], i: number): Edit[] {
  const close = matching(tokens, i + 1);
  if (close === undefined) return [];
  return [
    { at: tokens[i]!.start, remove: 0, insert: `${TRACK_FN}(` },
    { at: tokens[close]!.end, remove: 0, insert: ")" },
  ];
}

function asyncEdits(tokens: Token[], i: number): Edit[] {
  const next = tokens[i + 1];
  if (!next) return [];
  const drop: Edit = { at: tokens[i]!.start, remove: next.start - tokens[i]!.start, insert: "" };
  if (next.text === "function") {
    if (tokens[i + 2]?.text === "*") return [];
    const open = tokens.findIndex((t, k) => k > i + 1 && t.text === "(");
    return bodyAfterParams(tokens, open, drop);
  }
  if (next.text === "(") {
    const close = matching(tokens, i + 1);
    if (close !== undefined && tokens[close + 1]?.text === "=>") return arrowBody(tokens, close + 2, drop);
    return [];
  }
  if (next.kind === "name" && tokens[i + 2]?.text === "=>") return arrowBody(tokens, i + 3, drop);
  // A method: `async name(` or `async [expr](` or `async "name"(` (not `async *gen(`).
  if (next.kind === "name" || next.kind === "string")
    return tokens[i + 2]?.text === "(" ? bodyAfterParams(tokens, i + 2, drop) : [];
  if (next.text === "[") {
    const close = matching(tokens, i + 1);
    return close !== undefined && tokens[close + 1]?.text === "(" ? bodyAfterParams(tokens, close + 1, drop) : [];
  }
  return [];
}

/** Parameters opening at token `open`, then a `{ body }` to wrap. */
function bodyAfterParams(tokens: Token[], open: number, drop: Edit): Edit[] {
  if (open < 0 || tokens[open]?.text !== "(") return [];
  const close = matching(tokens, open);
  if (close === undefined || tokens[close + 1]?.text !== "{") return [];
  return blockBody(tokens, close + 1, drop);
}

function blockBody(tokens: Token[], open: number, drop: Edit): Edit[] {
  const close = matching(tokens, open);
  if (close === undefined) return [];
  return [
    drop,
    { at: tokens[open]!.end, remove: 0, insert: ` return ${TRACK_FN}((async () => {` },
    { at: tokens[close]!.start, remove: 0, insert: "})()); " },
  ];
}

/** An arrow's body from token `at`: a block, or an expression up to where it must end. */
function arrowBody(tokens: Token[], at: number, drop: Edit): Edit[] {
  if (!tokens[at]) return [];
  if (tokens[at]!.text === "{") return blockBody(tokens, at, drop);
  const end = expressionEnd(tokens, at);
  return [
    drop,
    { at: tokens[at]!.start, remove: 0, insert: `${TRACK_FN}((async () => ` },
    { at: tokens[end]!.end, remove: 0, insert: ")())" },
  ];
}

/**
 * The last token of an expression from `at`: before a `,` `;` or closing bracket at its depth.
 * A line break does not end it (`.then()` on the next line continues it); where one ended it by
 * automatic semicolon insertion, the rewrite does not compile and the cell runs as written.
 */
function expressionEnd(tokens: Token[], at: number): number {
  let depth = 0;
  for (let k = at; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (k > at && depth === 0 && [",", ";", ")", "]", "}"].includes(t.text)) return k - 1;
    if (["(", "[", "{"].includes(t.text)) depth++;
    if ([")", "]", "}"].includes(t.text)) depth--;
  }
  return tokens.length - 1;
}

const PAIRS: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/** The index of the bracket closing the one at `open` (template `${…}` parts count as their own tokens). */
function matching(tokens: Token[], open: number): number | undefined {
  const want = PAIRS[tokens[open]?.text ?? ""];
  if (!want) return undefined;
  const stack: string[] = [];
  for (let k = open; k < tokens.length; k++) {
    const t = tokens[k]!.text;
    if (tokens[k]!.kind !== "punct") continue;
    if (PAIRS[t]) stack.push(PAIRS[t]!);
    else if (t === ")" || t === "]" || t === "}") {
      if (stack.pop() !== t) return undefined;
      if (stack.length === 0) return k;
    }
  }
  return undefined;
}

function apply(src: string, edits: Edit[]): string {
  if (edits.length === 0) return src;
  // Later positions first, so earlier ones stay valid; at one position, in the order made.
  const ordered = edits.map((e, n) => ({ ...e, n })).sort((a, b) => b.at - a.at || b.n - a.n);
  let out = src;
  for (const e of ordered) out = out.slice(0, e.at) + e.insert + out.slice(e.at + e.remove);
  return out;
}
