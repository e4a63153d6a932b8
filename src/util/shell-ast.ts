/**
 * What a shell command is made of, as approval reads it: every simple command a script would
 * run, with its words, redirections and the scripts nested in substitutions. Two parsers produce
 * it: shell-tree.ts over the maintained bash grammar (approval), and shell-parse.ts, a small
 * hand-written one for splitting user command lines without a shell.
 */

export class ShellParseError extends Error {
  override name = "ShellParseError";
}

export interface Word {
  /** The source text of the word. */
  raw: string;
  /** After quote removal; expansions are kept as written. */
  value: string;
  /** No expansion, glob or brace: the program gets exactly `value`, as one argument. */
  fixed: boolean;
  /** Whether what the program gets could start with "-" (or be split into words that do). */
  mayBeOption: boolean;
  /** An unquoted expansion: the program may get several words from it, or none. */
  splits: boolean;
  /** Scripts run to expand this word: `$(...)`, backticks, `<(...)`, `>(...)`. */
  scripts: Script[];
}

export interface Redirect {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<>`, `<&`, `>&`, `<<`, `<<-`, `<<<`. */
  op: string;
  fd?: number;
  /** The file, descriptor, here-string or here-doc delimiter. */
  target: Word;
  /** Scripts in the body of an unquoted here-doc. */
  heredocScripts?: Script[];
}

export interface Assignment {
  name: string;
  word: Word;
}

export interface SimpleCommand {
  type: "simple";
  assigns: Assignment[];
  words: Word[];
  redirects: Redirect[];
}

/**
 * `( )`, `{ }`, `if`, `while`, `until`, `case` and function definitions: for approval only the
 * commands inside matter, and the words the construct itself expands (`case WORD in PATTERN)`).
 */
export interface GroupCommand {
  type: "group";
  body: Script;
  redirects: Redirect[];
  words?: Word[];
}

export interface ForCommand {
  type: "for";
  name: string;
  items: Word[];
  body: Script;
  redirects: Redirect[];
}

export type Command = SimpleCommand | GroupCommand | ForCommand;

/** Every command of a script, whatever joins them (`;`, `&&`, `||`, `|`, `&`, newlines). */
export interface Script {
  commands: Command[];
}

/** A shell variable name (what `NAME=value`, `for NAME` and `read NAME` take). */
export const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Whether the `[` or `{` just before `from` is a glob bracket or a brace expansion: its close
 * comes before `end`, the end of its word (for braces, with a `,` or `..` inside).
 */
export function bracketCloses(text: string, from: number, end: number, open: "[" | "{"): boolean {
  const close = open === "[" ? "]" : "}";
  let list = open === "[";
  for (let j = from; j < end; j++) {
    const c = text.charAt(j);
    if (c === close) return list;
    if (c === "," || text.startsWith("..", j)) list = true;
  }
  return false;
}

/** The only `${...}` forms accepted: a name, a positional or special parameter, or its length. */
export const SIMPLE_BRACED = /^#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])$/;

/** Collects a word's value and what is known about it while the parser reads it. */
export class WordBuilder {
  value = "";
  fixed = true;
  splits = false;
  /** The literal text before the first expansion: what every resulting word starts with. */
  prefix = "";
  private prefixDone = false;
  readonly scripts: Script[] = [];

  lit(s: string): void {
    this.value += s;
    if (!this.prefixDone) this.prefix += s;
  }

  /** An expansion; `splits` when its result undergoes word splitting. */
  dyn(text: string, splits: boolean): void {
    this.value += text;
    this.fixed = false;
    this.prefixDone = true;
    if (splits) this.splits = true;
  }

  /** `<(...)` and `>(...)` become one /dev/fd path, never an option. */
  procSubst(text: string): void {
    if (!this.prefixDone) this.prefix += "/dev/fd/";
    this.dyn(text, false);
  }

  finish(raw: string): Word {
    const mayBeOption = this.fixed
      ? this.value.startsWith("-")
      : this.splits || this.prefix === "" || this.prefix.startsWith("-");
    return { raw, value: this.value, fixed: this.fixed, mayBeOption, splits: this.splits, scripts: this.scripts };
  }
}
