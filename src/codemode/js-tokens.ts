/**
 * A small JavaScript tokenizer, enough to find `async` functions and `import(` in a cell's
 * source (track-async.ts): strings, template literals (their `${…}` parts included), comments
 * and regular expressions are read as single tokens so nothing inside them is mistaken for
 * code. Whether a `/` starts a regular expression is decided by the token before it, as
 * editors do. Anything it cannot read gives undefined, and the cell runs untouched.
 */

export interface Token {
  kind: "name" | "punct" | "string" | "template" | "regex" | "number";
  text: string;
  start: number;
  end: number;
  /** A line break came between this token and the one before. */
  newlineBefore: boolean;
}

const PUNCT3 = ["...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??="];
const PUNCT2 = [
  "=>",
  "==",
  "!=",
  "<=",
  ">=",
  "&&",
  "||",
  "??",
  "?.",
  "++",
  "--",
  "+=",
  "-=",
  "*=",
  "/=",
  "%=",
  "&=",
  "|=",
  "^=",
  "**",
  "<<",
  ">>",
];
/** After these a `/` divides; after anything else it starts a regular expression. */
const ENDS_VALUE = new Set([")", "]", "}"]);
const KEYWORDS_BEFORE_VALUE = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
]);

export function tokenize(src: string): Token[] | undefined {
  const out: Token[] = [];
  const braces: Array<"code" | "template"> = [];
  let i = 0;
  let newline = false;
  while (i < src.length) {
    const c = src[i]!;
    if (c === "\n" || c === "\r" || c === "\u2028" || c === "\u2029") {
      newline = true;
      i++;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const skipped = skipComment(src, i);
    if (skipped === undefined) return undefined;
    if (skipped > i) {
      if (src.slice(i, skipped).includes("\n")) newline = true;
      i = skipped;
      continue;
    }
    const t = readToken(src, i, out.at(-1), braces);
    if (!t) return undefined;
    out.push({ ...t, newlineBefore: newline });
    newline = false;
    i = t.end;
  }
  return braces.length === 0 ? out : undefined;
}

/** The index after a comment at `i` (i itself when none; undefined when unterminated). */
function skipComment(src: string, i: number): number | undefined {
  if (src.startsWith("//", i)) {
    const end = src.slice(i).search(/[\n\r\u2028\u2029]/);
    return end === -1 ? src.length : i + end;
  }
  if (src.startsWith("/*", i)) {
    const end = src.indexOf("*/", i + 2);
    return end === -1 ? undefined : end + 2;
  }
  return i;
}

type Raw = Omit<Token, "newlineBefore">;

function readToken(
  src: string,
  i: number,
  prev: Token | undefined,
  braces: Array<"code" | "template">,
): Raw | undefined {
  const c = src[i]!;
  if (c === '"' || c === "'") return quoted(src, i, c, "string");
  if (c === "`") return template(src, i + 1, i, braces);
  if (c === "}" && braces.at(-1) === "template") {
    braces.pop();
    return template(src, i + 1, i, braces);
  }
  if (c === "/" && regexAllowed(prev)) return regex(src, i);
  const name = /^[A-Za-z_$\u0080-\uffff#][\w$\u0080-\uffff]*/.exec(src.slice(i, i + 256));
  if (name) return { kind: "name", text: name[0], start: i, end: i + name[0].length };
  const num = /^(?:0[xXoObB][\da-fA-F_]+n?|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?n?)/.exec(
    src.slice(i, i + 256),
  );
  if (num) return { kind: "number", text: num[0], start: i, end: i + num[0].length };
  const p = PUNCT3.find((x) => src.startsWith(x, i)) ?? PUNCT2.find((x) => src.startsWith(x, i)) ?? c;
  if (p === "{" || p === "${") braces.push("code");
  if (p === "}") braces.pop();
  return { kind: "punct", text: p, start: i, end: i + p.length };
}

function regexAllowed(prev: Token | undefined): boolean {
  if (!prev) return true;
  if (prev.kind === "number" || prev.kind === "string" || prev.kind === "template" || prev.kind === "regex")
    return false;
  if (prev.kind === "name") return KEYWORDS_BEFORE_VALUE.has(prev.text);
  return !ENDS_VALUE.has(prev.text);
}

function quoted(src: string, start: number, q: string, kind: Raw["kind"]): Raw | undefined {
  for (let i = start + 1; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") i++;
    else if (c === q) return { kind, text: src.slice(start, i + 1), start, end: i + 1 };
    else if (c === "\n") return undefined;
  }
  return undefined;
}

/** A template part from `from` to its closing backtick, or to a `${` (then code follows). */
function template(src: string, from: number, start: number, braces: Array<"code" | "template">): Raw | undefined {
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") i++;
    else if (c === "`") return { kind: "template", text: src.slice(start, i + 1), start, end: i + 1 };
    else if (c === "$" && src[i + 1] === "{") {
      braces.push("template");
      return { kind: "template", text: src.slice(start, i + 2), start, end: i + 2 };
    }
  }
  return undefined;
}

function regex(src: string, start: number): Raw | undefined {
  let inClass = false;
  for (let i = start + 1; i < src.length; i++) {
    const c = src[i];
    if (c === "\\") i++;
    else if (c === "\n") return undefined;
    else if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) {
      const flags = /^[a-z]*/.exec(src.slice(i + 1))![0];
      return { kind: "regex", text: src.slice(start, i + 1 + flags.length), start, end: i + 1 + flags.length };
    }
  }
  return undefined;
}
