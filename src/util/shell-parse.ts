/**
 * A parser for the part of POSIX sh / bash that commands written by a model use, built for one
 * job: letting approval see every simple command a script would run, with its words, its
 * redirections and the scripts nested in substitutions. It evaluates nothing. Constructs it does
 * not model (arithmetic, `case`, functions, `${x...}` operators, zsh-only expansions) raise a
 * ShellParseError, so a caller that must be safe treats the command as unknown. The characters
 * and reserved words it reads by are in shell-parse-lexicon.ts.
 */

import {
  type Command,
  type ForCommand,
  type GroupCommand,
  type Redirect,
  type Script,
  SHELL_NAME,
  ShellParseError,
  SIMPLE_BRACED,
  type SimpleCommand,
  type Word,
  WordBuilder,
} from "./shell-ast.ts";
import { ASSIGNMENT, BLANK, closesInWord, keywordAt, META, NOT_MODELLED, redirectAt } from "./shell-parse-lexicon.ts";
import { decodeAnsiC, unescapeBackticks } from "./shell-quoting.ts";

export type {
  Assignment,
  Command,
  ForCommand,
  GroupCommand,
  Redirect,
  Script,
  SimpleCommand,
  Word,
} from "./shell-ast.ts";
export { ShellParseError } from "./shell-ast.ts";

const MAX_DEPTH = 16;

export function parseShell(src: string): Script {
  return new Parser(src, 0).parseAll();
}

interface PendingHeredoc {
  redirect: Redirect;
  delimiter: string;
  quoted: boolean;
  stripTabs: boolean;
}

class Parser {
  private pos = 0;
  private pending: PendingHeredoc[] = [];

  constructor(
    private readonly src: string,
    private depth: number,
  ) {
    if (depth > MAX_DEPTH) throw new ShellParseError("substitutions are nested too deeply");
  }

  parseAll(): Script {
    const { script } = this.parseList(new Set(), false);
    this.readHeredocs();
    return script;
  }

  private peek(k = 0): string {
    return this.src.charAt(this.pos + k);
  }

  private fail(what: string): never {
    throw new ShellParseError(`${what} at offset ${this.pos}`);
  }

  /** Runs `f` one nesting level deeper, refusing runaway nesting. */
  private nested<T>(f: () => T): T {
    if (this.depth + 1 > MAX_DEPTH) this.fail("the command is nested too deeply");
    this.depth++;
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  /** Skips blanks, line continuations and comments (a `#` where a word would start). */
  private skipBlanks(): void {
    for (;;) {
      const c = this.peek();
      if (BLANK.has(c)) this.pos++;
      else if (c === "\\" && this.peek(1) === "\n") this.pos += 2;
      else if (c === "#") while (this.peek() !== "" && this.peek() !== "\n") this.pos++;
      else return;
    }
  }

  /**
   * Commands up to one of `terms` in command position, or up to `)` when `closeParen`, or the
   * end. Returns which keyword ended the list.
   */
  private parseList(terms: ReadonlySet<string>, closeParen: boolean): { script: Script; end: string } {
    const commands: Command[] = [];
    let afterCommand = false;
    let needCommand = false;
    const separator = (len: number, joins: boolean): void => {
      if (!afterCommand) this.fail("unexpected operator");
      this.pos += len;
      afterCommand = false;
      needCommand = joins;
    };
    for (;;) {
      this.skipBlanks();
      const c = this.peek();
      if (c === "") {
        if (closeParen || terms.size > 0) this.fail("unexpected end of the command");
        if (needCommand) this.fail("a command is missing after an operator");
        return { script: { commands }, end: "" };
      }
      if (c === "\n") {
        this.pos++;
        this.readHeredocs();
        afterCommand = false;
        continue;
      }
      if (c === ")") {
        if (!closeParen || needCommand) this.fail("unexpected )");
        this.pos++;
        return { script: { commands }, end: ")" };
      }
      if (c === ";") {
        if (this.peek(1) === ";") this.fail("`;;` (case) is not analysed");
        separator(1, false);
        continue;
      }
      if (c === "&" && this.peek(1) !== ">") {
        if (this.peek(1) === "&") separator(2, true);
        else separator(1, false);
        continue;
      }
      if (c === "|") {
        separator(this.peek(1) === "|" || this.peek(1) === "&" ? 2 : 1, true);
        continue;
      }
      const kw = keywordAt(this.src, this.pos);
      if (kw !== undefined && terms.has(kw)) {
        if (needCommand) this.fail(`a command is missing before ${kw}`);
        this.pos += kw.length;
        return { script: { commands }, end: kw };
      }
      if (afterCommand) this.fail("unexpected word after a compound command");
      commands.push(this.parseCommand());
      afterCommand = true;
      needCommand = false;
    }
  }
  private parseCommand(): Command {
    return this.nested(() => this.parseCommandHere());
  }

  private parseCommandHere(): Command {
    if (this.peek() === "(") {
      if (this.peek(1) === "(") this.fail("the arithmetic command (( )) is not analysed");
      this.pos++;
      return this.group(this.parseList(new Set(), true).script);
    }
    const kw = keywordAt(this.src, this.pos);
    if (kw === undefined) return this.parseSimple();
    if (NOT_MODELLED.has(kw)) this.fail(`\`${kw}\` is not analysed`);
    this.pos += kw.length;
    switch (kw) {
      case "!":
        this.skipBlanks();
        return this.parseCommand();
      case "{":
        return this.group(this.parseList(new Set(["}"]), false).script);
      case "if":
        return this.group(this.parseIf());
      case "while":
      case "until":
        return this.group(
          this.concat(this.parseList(new Set(["do"]), false).script, this.parseList(new Set(["done"]), false).script),
        );
      case "for":
        return this.parseFor();
      default:
        return this.fail(`unexpected \`${kw}\``);
    }
  }

  private group(body: Script): GroupCommand {
    return { type: "group", body, redirects: this.parseTrailingRedirects() };
  }

  private concat(...scripts: Script[]): Script {
    return { commands: scripts.flatMap((s) => s.commands) };
  }

  /** `if` was read: conditions and branches up to `fi`. */
  private parseIf(): Script {
    const parts: Script[] = [];
    for (;;) {
      parts.push(this.parseList(new Set(["then"]), false).script);
      const branch = this.parseList(new Set(["elif", "else", "fi"]), false);
      parts.push(branch.script);
      if (branch.end === "fi") return this.concat(...parts);
      if (branch.end === "else") {
        parts.push(this.parseList(new Set(["fi"]), false).script);
        return this.concat(...parts);
      }
    }
  }

  /** `for` was read: `NAME [in WORDS] ; do LIST done`. */
  private parseFor(): ForCommand {
    this.skipBlanks();
    if (this.peek() === "(") this.fail("the arithmetic for (( )) is not analysed");
    const nameWord = this.parseWord();
    if (!nameWord.fixed || !SHELL_NAME.test(nameWord.raw)) this.fail("a for loop needs a variable name");
    const items: Word[] = [];
    this.skipSeparators(false);
    if (keywordAt(this.src, this.pos) === "in") {
      this.pos += 2;
      for (;;) {
        this.skipBlanks();
        const c = this.peek();
        if (c === ";" || c === "\n" || c === "") break;
        if (META.has(c)) this.fail("unexpected operator in a for list");
        items.push(this.parseWord());
      }
    }
    this.skipSeparators(true);
    if (keywordAt(this.src, this.pos) !== "do") this.fail("a for loop needs `do`");
    this.pos += 2;
    const body = this.parseList(new Set(["done"]), false).script;
    return { type: "for", name: nameWord.raw, items, body, redirects: this.parseTrailingRedirects() };
  }

  /** Blanks and newlines, and one `;` if `semicolon`, between the parts of a `for`. */
  private skipSeparators(semicolon: boolean): void {
    for (;;) {
      this.skipBlanks();
      const c = this.peek();
      if (c === "\n") {
        this.pos++;
        this.readHeredocs();
      } else if (c === ";" && semicolon) {
        this.pos++;
        semicolon = false;
      } else return;
    }
  }

  private parseTrailingRedirects(): Redirect[] {
    const out: Redirect[] = [];
    for (;;) {
      this.skipBlanks();
      if (!redirectAt(this.src, this.pos)) return out;
      out.push(this.parseRedirect());
    }
  }

  private parseSimple(): SimpleCommand {
    const cmd: SimpleCommand = { type: "simple", assigns: [], words: [], redirects: [] };
    for (;;) {
      this.skipBlanks();
      const c = this.peek();
      if (c === "" || c === "\n" || c === ";" || c === "|" || c === ")") break;
      if (c === "&" && this.peek(1) !== ">") break;
      if (c === "(") this.fail("unexpected ( (function definitions, arrays and extended globs are not analysed)");
      if (redirectAt(this.src, this.pos)) {
        cmd.redirects.push(this.parseRedirect());
        continue;
      }
      const word = this.parseWord();
      const assign = cmd.words.length === 0 ? ASSIGNMENT.exec(word.raw) : null;
      if (assign?.[1] !== undefined) cmd.assigns.push({ name: assign[1], word });
      else cmd.words.push(word);
    }
    if (cmd.words.length + cmd.assigns.length + cmd.redirects.length === 0) this.fail("a command is missing");
    return cmd;
  }
  private parseRedirect(): Redirect {
    const digits = /^[0-9]*/.exec(this.src.slice(this.pos))?.[0] ?? "";
    this.pos += digits.length;
    const op = ["&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">>", ">&", ">|", "<", ">"].find((o) =>
      this.src.startsWith(o, this.pos),
    );
    if (op === undefined) return this.fail("expected a redirection");
    this.pos += op.length;
    this.skipBlanks();
    const c = this.peek();
    if (c === "" || (META.has(c) && !((c === "<" || c === ">") && this.peek(1) === "(")))
      this.fail(`${op} needs a target`);
    const target = this.parseWord();
    const redirect: Redirect = { op, target, ...(digits ? { fd: Number(digits) } : {}) };
    if (op === "<<" || op === "<<-") {
      const quoted = /['"\\]/.test(target.raw);
      this.pending.push({ redirect, delimiter: target.value, quoted, stripTabs: op === "<<-" });
    }
    return redirect;
  }

  /** After a newline: the bodies of the here-docs opened on the line just ended. */
  private readHeredocs(): void {
    const pending = this.pending;
    this.pending = [];
    for (const h of pending) {
      let body = "";
      while (this.pos < this.src.length) {
        const nl = this.src.indexOf("\n", this.pos);
        const end = nl === -1 ? this.src.length : nl;
        const line = this.src.slice(this.pos, end);
        this.pos = nl === -1 ? end : end + 1;
        if ((h.stripTabs ? line.replace(/^\t+/, "") : line) === h.delimiter) break;
        body += `${line}\n`;
      }
      h.redirect.heredocScripts = h.quoted ? [] : new Parser(body, this.depth + 1).expansionsIn();
    }
  }

  /** The scripts of the substitutions in an unquoted here-doc body (the whole source). */
  expansionsIn(): Script[] {
    const b = new WordBuilder();
    while (this.pos < this.src.length) {
      const c = this.peek();
      if (c === "\\") this.pos += 2;
      else if (c === "$") this.readDollar(b, true);
      else if (c === "`") this.readBacktick(b, true);
      else this.pos++;
    }
    return b.scripts;
  }

  private parseWord(): Word {
    const start = this.pos;
    const b = new WordBuilder();
    for (;;) {
      const c = this.peek();
      if (c === "") break;
      if (c === "<" || c === ">") {
        if (this.peek(1) !== "(") break;
        this.pos += 2;
        b.scripts.push(this.nested(() => this.parseList(new Set(), true).script));
        b.procSubst(`${c}(…)`);
        continue;
      }
      if (META.has(c)) break;
      this.readWordChar(c, b);
    }
    if (this.pos === start) this.fail("expected a word");
    return b.finish(this.src.slice(start, this.pos));
  }

  /** One unquoted character, or the quoted string or expansion it starts. */
  private readWordChar(c: string, b: WordBuilder): void {
    if (c === "\\") {
      const n = this.peek(1);
      this.pos += n === "" ? 1 : 2;
      if (n !== "\n") b.lit(n === "" ? "\\" : n);
    } else if (c === "'") {
      const end = this.src.indexOf("'", this.pos + 1);
      if (end === -1) this.fail("unterminated '");
      b.lit(this.src.slice(this.pos + 1, end));
      this.pos = end + 1;
    } else if (c === '"') {
      this.pos++;
      this.readDoubleQuoted(b);
    } else if (c === "$") this.readDollar(b, false);
    else if (c === "`") this.readBacktick(b, false);
    else {
      this.pos++;
      if (c === "*" || c === "?" || ((c === "[" || c === "{") && closesInWord(this.src, this.pos, c))) b.dyn(c, false);
      else b.lit(c);
    }
  }
  /** The opening `"` was read. */
  private readDoubleQuoted(b: WordBuilder): void {
    for (;;) {
      const c = this.peek();
      if (c === "") this.fail('unterminated "');
      if (c === '"') {
        this.pos++;
        return;
      }
      if (c === "\\") {
        const n = this.peek(1);
        if (n === "\n") this.pos += 2;
        else if (n !== "" && '$`"\\'.includes(n)) {
          b.lit(n);
          this.pos += 2;
        } else {
          b.lit("\\");
          this.pos++;
        }
      } else if (c === "$") this.readDollar(b, true);
      else if (c === "`") this.readBacktick(b, true);
      else {
        b.lit(c);
        this.pos++;
      }
    }
  }

  /** At a `$`: a substitution, a parameter, a quoting form, or a literal dollar sign. */
  private readDollar(b: WordBuilder, quoted: boolean): void {
    const n = this.peek(1);
    if (n === "(") {
      if (this.peek(2) === "(") this.fail("arithmetic expansion $(( )) is not analysed");
      this.pos += 2;
      b.scripts.push(this.nested(() => this.parseList(new Set(), true).script));
      b.dyn("$(…)", !quoted);
    } else if (n === "{") {
      const end = this.src.indexOf("}", this.pos);
      const inner = end === -1 ? "" : this.src.slice(this.pos + 2, end);
      if (!SIMPLE_BRACED.test(inner)) this.fail("this ${...} parameter expansion is not analysed");
      // "$@" and "${@}" expand to one word per parameter even when quoted.
      b.dyn(this.src.slice(this.pos, end + 1), !quoted || inner === "@");
      this.pos = end + 1;
    } else if (n === "'" && !quoted) {
      this.readAnsiC(b);
    } else if (n === '"' && !quoted) {
      this.pos += 2;
      this.readDoubleQuoted(b);
    } else if (/[A-Za-z_]/.test(n)) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.src.slice(this.pos + 1))?.[0] ?? n;
      b.dyn(`$${name}`, !quoted);
      this.pos += 1 + name.length;
    } else if (n !== "" && "0123456789@*#?$!-".includes(n)) {
      b.dyn(`$${n}`, !quoted || n === "@");
      this.pos += 2;
    } else if (n !== "" && "[=~^+".includes(n)) {
      this.fail(`$${n} (arithmetic or a zsh expansion) is not analysed`);
    } else {
      b.lit("$");
      this.pos++;
    }
  }

  /** At a backtick: the old form of command substitution, whose body is unescaped then parsed. */
  private readBacktick(b: WordBuilder, inDouble: boolean): void {
    const start = ++this.pos;
    for (;;) {
      const c = this.peek();
      if (c === "") this.fail("unterminated `");
      if (c === "`") break;
      this.pos += c === "\\" && this.peek(1) !== "" ? 2 : 1;
    }
    const body = unescapeBackticks(this.src.slice(start, this.pos), inDouble);
    this.pos++;
    b.scripts.push(new Parser(body, this.depth + 1).parseAll());
    b.dyn("`…`", !inDouble);
  }

  /** `$'...'`: backslash escapes are decoded; the text is literal. */
  private readAnsiC(b: WordBuilder): void {
    this.pos += 2;
    const start = this.pos;
    for (;;) {
      const c = this.peek();
      if (c === "") this.fail("unterminated $'");
      if (c === "'") break;
      this.pos += c === "\\" && this.peek(1) !== "" ? 2 : 1;
    }
    b.lit(decodeAnsiC(this.src.slice(start, this.pos)));
    this.pos++;
  }
}
