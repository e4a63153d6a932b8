/**
 * What the tree reader (shell-tree.ts) does with a node of the bash grammar on its own: its
 * children and fields, the first syntax error in words, the error for what is not analysed, and
 * the checks that need only the node's text (arithmetic, a here-document's end, a literal that
 * would hide a substitution).
 */
import type { SyntaxNode } from "./bash-grammar.ts";
import { type Command, type Redirect, ShellParseError, type Word } from "./shell-ast.ts";

/** Arithmetic that names no variable and runs nothing: numbers and operators. */
const ARITHMETIC = new Set([
  "number",
  "binary_expression",
  "unary_expression",
  "parenthesized_expression",
  "ternary_expression",
]);
const ASSIGNING = /^([+\-*/%&^|]|<<|>>)?=$|^(\+\+|--)$/;
/** Where an unquoted or double-quoted literal would start a substitution bash runs. */
const SUBSTITUTION_START = /^(`|\$[({[A-Za-z_0-9@*#?$!'"-])/;

/** What the first ERROR or MISSING node of a tree says, in words. */
export function syntaxError(root: SyntaxNode, src: string): string {
  const bad = firstError(root);
  if (!bad) return "a syntax error";
  const at = bad.startIndex;
  if (bad.isMissing)
    return bad.type === '"' || bad.type === "'" || bad.type === "`"
      ? `unterminated ${bad.type}`
      : `${bad.type === "word" ? "a word" : `\`${bad.type}\``} is missing at offset ${at}`;
  const text = src.slice(at, bad.endIndex);
  const quote = text.charAt(0);
  if ((quote === '"' || quote === "'" || quote === "`") && !src.slice(at + 1).includes(quote))
    return `unterminated ${quote}`;
  return `a syntax error at offset ${at} near ${JSON.stringify(text.slice(0, 24))}`;
}

function firstError(node: SyntaxNode): SyntaxNode | undefined {
  if (node.type === "ERROR" || node.isMissing) return node;
  for (const child of kids(node)) {
    if (child.hasError || child.isMissing || child.type === "ERROR") return firstError(child) ?? child;
  }
  return undefined;
}

export function notAnalysed(node: SyntaxNode, where = ""): never {
  const what = node.isNamed ? node.type.replaceAll("_", " ") : `the token ${JSON.stringify(node.type)}`;
  throw new ShellParseError(`${what}${where} is not analysed (at offset ${node.startIndex})`);
}

/** A word whose value is exactly `text`. */
export function fixedWord(text: string, raw = text): Word {
  return { raw, value: text, fixed: true, mayBeOption: text.startsWith("-"), splits: false, scripts: [] };
}

/** The children of `node`, tokens included. */
export function kids(node: SyntaxNode): SyntaxNode[] {
  return node.children.filter((c): c is SyntaxNode => c !== null);
}

export function named(node: SyntaxNode): SyntaxNode[] {
  return node.namedChildren.filter((c): c is SyntaxNode => c !== null);
}

/** Each child of `node` with the field it fills, if any. */
export function* fields(node: SyntaxNode): Generator<[SyntaxNode, string | null]> {
  for (let i = 0; i < node.childCount; i++) {
    const child = node.child(i);
    if (child) yield [child, node.fieldNameForChild(i)];
  }
}

/** What a redirection adds: itself, words the grammar hung on it, and commands after a here-doc. */
export interface RedirectParts {
  redirects: Redirect[];
  words: Word[];
  commands: Command[];
}

export function addParts(into: RedirectParts, more: RedirectParts): void {
  into.redirects.push(...more.redirects);
  into.words.push(...more.words);
  into.commands.push(...more.commands);
}

/** bash ends a here-document at the first line that is its delimiter: the grammar must agree. */
export function checkHeredocEnd(
  op: string,
  delimiter: string,
  body: SyntaxNode | undefined,
  end: SyntaxNode | undefined,
): void {
  if (!end || end.text !== delimiter)
    throw new ShellParseError(`the here-document ${delimiter} does not end where relay can see`);
  const lines = body ? body.text.split("\n") : [];
  const strip = (line: string) => (op === "<<-" ? line.replace(/^\t+/, "") : line);
  if (lines.some((line) => strip(line) === delimiter))
    throw new ShellParseError(`the here-document ${delimiter} ends earlier than the grammar read it`);
}

/** Arithmetic bash evaluates: numbers and operators only, since a variable's value is itself evaluated (and `a[$(cmd)]` in it runs cmd). */
export function checkArithmetic(n: SyntaxNode): void {
  for (const c of named(n)) {
    if (!ARITHMETIC.has(c.type))
      throw new ShellParseError(
        `arithmetic on ${c.type.replaceAll("_", " ")}s is not analysed: bash evaluates a variable's value as an expression, which can run commands`,
      );
    checkArithmetic(c);
  }
  for (const c of kids(n))
    if (!c.isNamed && ASSIGNING.test(c.type)) throw new ShellParseError("arithmetic that assigns is not analysed");
}

/** A literal must not hold a substitution the grammar left unread: that would hide a command. */
export function auditLiteral(text: string, at: number, where: string): void {
  for (let i = 0; i < text.length; i++) {
    if (text.charAt(i) === "\\") i++;
    else if (SUBSTITUTION_START.test(text.slice(i, i + 2)) && !(text.charAt(i) === "$" && i + 1 === text.length)) {
      throw new ShellParseError(
        `${text.charAt(i) === "`" ? "a backtick" : `\`${text.slice(i, i + 2)}\``} in ${where} is not analysed (at offset ${at + i})`,
      );
    }
  }
}
