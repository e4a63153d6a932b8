/**
 * Is a shell command known to only read? The `untrusted` approval policy runs such commands
 * without asking and asks for everything else. The command is parsed with the maintained bash
 * grammar (src/util/shell-tree.ts; loadBashGrammar() must have been awaited first) and every simple command in it, including those in substitutions and in `bash -c` scripts, must
 * be on the read-only list below without any of its write-capable options, and every redirection
 * must only read or go to /dev/null. Anything not understood asks (fails closed). A refusal says
 * why, for the approval prompt.
 */

import { prefixMatches, type UserApprovalRule } from "../config/approval-rules.ts";
import { loadedBashGrammar } from "../util/bash-grammar.ts";
import {
  type Command,
  type Redirect,
  type Script,
  SHELL_NAME,
  type SimpleCommand,
  type Word,
} from "../util/shell-ast.ts";
import { parseShellTree } from "../util/shell-tree.ts";
import { type BuiltinRule, builtinPolicy } from "./builtin-rules.ts";

export type Safety = { safe: true } | { safe: false; reason: string };

const SAFE: Safety = { safe: true };
const ask = (reason: string): Safety => ({ safe: false, reason });
const MAX_DEPTH = 8;

/**
 * The user's `[[approval_rules]]` for the check under way. The check is synchronous, so a
 * module-level value set around it reaches every nested script without threading it through.
 */
let userRules: readonly UserApprovalRule[] = [];

/** The verdict on `cmd`; `rules` (config.toml's) decide the simple commands they match first. */
export function commandSafety(cmd: string, rules: readonly UserApprovalRule[] = []): Safety {
  userRules = rules;
  try {
    return judge(cmd);
  } finally {
    userRules = [];
  }
}

/** The command's script, read with the bash grammar (an error when it is not loaded). */
function parse(src: string): Script {
  const parser = loadedBashGrammar();
  if (!parser) throw new Error("the bash grammar is not loaded");
  return parseShellTree(parser, src);
}

function judge(cmd: string): Safety {
  let script: Script;
  try {
    script = parse(cmd);
  } catch (e) {
    // Any failure, a stack overflow on absurd nesting included, means "not understood".
    return ask(`relay could not analyse the command (${e instanceof Error ? e.message : String(e)})`);
  }
  if (script.commands.length === 0) return ask("the command is empty");
  return checkScript(script, 0);
}

/** The first verdict that is not safe, evaluating lazily. */
function first(...checks: Array<() => Safety>): Safety {
  for (const check of checks) {
    const v = check();
    if (!v.safe) return v;
  }
  return SAFE;
}

function checkScript(script: Script, depth: number): Safety {
  if (depth > MAX_DEPTH) return ask("the command nests scripts too deeply to analyse");
  return first(...script.commands.map((c) => () => checkCommand(c, depth)));
}

function checkCommand(c: Command, depth: number): Safety {
  const redirects = (): Safety => checkRedirects(c.redirects, depth);
  if (c.type === "simple") return first(redirects, () => checkSimple(c, depth));
  if (c.type === "for")
    return first(
      redirects,
      () => checkVariable(c.name),
      () => checkWordScripts(c.items, depth),
      () => checkScript(c.body, depth),
    );
  return first(
    redirects,
    () => checkWordScripts(c.words ?? [], depth),
    () => checkScript(c.body, depth),
  );
}

function checkSimple(c: SimpleCommand, depth: number): Safety {
  return first(
    () => checkWordScripts([...c.assigns.map((a) => a.word), ...c.words], depth),
    () => first(...c.assigns.map((a) => () => checkVariable(a.name, a.word))),
    () => (c.words.length === 0 ? SAFE : checkArgv(c.words, { depth, appended: undefined })),
  );
}

/** The scripts that expanding these words runs: `$(...)`, backticks, `<(...)`. */
function checkWordScripts(words: readonly Word[], depth: number): Safety {
  for (const w of words) {
    for (const s of w.scripts) {
      const v = checkScript(s, depth + 1);
      if (!v.safe) return ask(`in the substitution in ${w.raw}: ${v.reason}`);
    }
  }
  return SAFE;
}

// ---------------------------------------------------------------------------------------------
// Redirections and variables

/** Output may go to these; anything else a redirection opens for writing asks. */
const HARMLESS_SINKS = new Set(["/dev/null", "/dev/stdout", "/dev/stderr"]);

function checkRedirects(redirects: readonly Redirect[], depth: number): Safety {
  return first(
    ...redirects.map(
      (r) => () =>
        first(
          () => checkWordScripts([r.target], depth),
          () =>
            first(...(r.heredocScripts ?? []).map((s) => () => within("the here-document", checkScript(s, depth + 1)))),
          () => checkRedirect(r),
        ),
    ),
  );
}

function within(where: string, v: Safety): Safety {
  return v.safe ? v : ask(`in ${where}: ${v.reason}`);
}

function checkRedirect(r: Redirect): Safety {
  const t = r.target;
  if (r.op === "<" || r.op === "<<" || r.op === "<<-" || r.op === "<<<") return SAFE;
  // `2>&1`, `>&2`, `<&0`, `>&-`: duplicating or closing a descriptor opens no file.
  if ((r.op === ">&" || r.op === "<&") && t.fixed && /^([0-9]+-?|-)$/.test(t.value)) return SAFE;
  if (r.op === "<&") return ask(`the redirection <&${t.raw} is not understood`);
  if (t.fixed && HARMLESS_SINKS.has(t.value)) return SAFE;
  if (r.op === "<>") return ask(`<> opens ${t.raw} for writing`);
  return ask(`the redirection ${r.op} ${t.raw} writes a file`);
}

/** Variables that nothing runs or loads code from, so setting them is harmless. */
const HARMLESS_ENV =
  /^(LC_[A-Z]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|TERM|GREP_COLORS)$/;
/** Lower-case names that zsh ties to its search paths. */
const ZSH_SPECIAL = new Set(["path", "cdpath", "fpath", "manpath", "module_path", "mailpath", "psvar"]);
/** Pagers are run as commands: only ones that just print are allowed. */
const PAGER_VARS = new Set(["PAGER", "GIT_PAGER"]);

/** Setting `name` (to the value in `word`, `NAME=VALUE`) changes nothing that runs or writes. */
function checkVariable(name: string, word?: Word): Safety {
  if (HARMLESS_ENV.test(name)) return SAFE;
  if (/^[a-z_][a-z0-9_]*$/.test(name) && !ZSH_SPECIAL.has(name)) return SAFE;
  if (PAGER_VARS.has(name) && word?.fixed && ["cat", ""].includes(word.value.slice(word.value.indexOf("=") + 1)))
    return SAFE;
  return ask(`setting ${name} can change what a command runs or where it writes`);
}

// ---------------------------------------------------------------------------------------------
// Options

interface OptionSpec {
  /** Options that write or run something, with what they do. Long names also match abbreviations. */
  deny?: Readonly<Record<string, string>>;
  /**
   * Short options whose value is the rest of the word or the next word. List only letters sure to
   * take a value: a missing letter makes approval stricter, a wrong one could hide an option.
   */
  shortValue?: string;
  /** Short options whose optional value can only be attached (`-i.bak`, `-I{}`): never the next word. */
  shortAttached?: string;
  /** Long options whose value may be the next word (when written without `=`). */
  longValue?: readonly string[];
  /** When set, every other option asks: for wrappers, whose unknown options could run something. */
  only?: readonly string[];
}

interface ParsedArgs {
  /** Arguments that are not options, computed ones included. */
  positionals: Word[];
  /** The options seen, as written up to `=` (`-o`, `--output`), with their values. */
  options: Array<{ name: string; value?: string }>;
}

const computed = (w: Word, cmd: string): Safety => ask(`relay cannot check the computed argument ${w.raw} of ${cmd}`);

/** Reads `args` as getopt would, refusing a denied option or a computed word that may be one. */
function scanArgs(cmd: string, args: readonly Word[], spec: OptionSpec): ParsedArgs | Safety {
  const out: ParsedArgs = { positionals: [], options: [] };
  let optionsDone = false;
  for (let i = 0; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed && w.mayBeOption) return computed(w, cmd);
    const v = w.value;
    if (!w.fixed || optionsDone || v === "-" || !v.startsWith("-")) {
      out.positionals.push(w);
      continue;
    }
    if (v === "--") {
      optionsDone = true;
      continue;
    }
    const r = v.startsWith("--") ? scanLong(cmd, v, spec, out) : scanShort(cmd, v, spec, out);
    if (typeof r !== "string") return r;
    if (r === "next") {
      const value = args[++i];
      if (value && !value.fixed && value.mayBeOption) return computed(value, cmd);
      const last = out.options.at(-1);
      if (last && value) last.value = value.value;
    }
  }
  return out;
}

/** "next" when the option's value is the next word. */
function scanLong(cmd: string, v: string, spec: OptionSpec, out: ParsedArgs): Safety | "next" | "done" {
  const eq = v.indexOf("=");
  const name = eq === -1 ? v.slice(2) : v.slice(2, eq);
  for (const [denied, what] of Object.entries(spec.deny ?? {})) {
    if (denied.startsWith("--") && denied.slice(2).startsWith(name)) return ask(`${cmd} ${denied} ${what}`);
  }
  if (spec.only && !spec.only.includes(`--${name}`)) return ask(`${cmd} --${name} is not understood`);
  out.options.push({ name: `--${name}`, ...(eq === -1 ? {} : { value: v.slice(eq + 1) }) });
  return eq === -1 && spec.longValue?.includes(name) ? "next" : "done";
}

function scanShort(cmd: string, v: string, spec: OptionSpec, out: ParsedArgs): Safety | "next" | "done" {
  for (let j = 1; j < v.length; j++) {
    const letter = v.charAt(j);
    const what = spec.deny?.[`-${letter}`];
    if (what !== undefined) return ask(`${cmd} -${letter} ${what}`);
    if (spec.only && !spec.only.includes(`-${letter}`)) return ask(`${cmd} -${letter} is not understood`);
    const rest = v.slice(j + 1);
    if (spec.shortAttached?.includes(letter)) {
      out.options.push({ name: `-${letter}`, ...(rest ? { value: rest } : {}) });
      return "done";
    }
    if (spec.shortValue?.includes(letter)) {
      out.options.push({ name: `-${letter}`, ...(rest ? { value: rest } : {}) });
      return rest ? "done" : "next";
    }
    out.options.push({ name: `-${letter}` });
  }
  return "done";
}

function isSafety(r: ParsedArgs | Safety): r is Safety {
  return "safe" in r;
}

const has = (p: ParsedArgs, ...names: string[]): boolean => p.options.some((o) => names.includes(o.name));

// ---------------------------------------------------------------------------------------------
// Commands

interface ReadOnlySpec extends OptionSpec {
  /** No argument can make it write or run anything, so computed arguments are fine too. */
  anyArgs?: boolean;
  /** For a command that does not parse options getopt-style: decides from its words alone. */
  words?: (args: readonly Word[]) => Safety;
  /** More rules on the parsed arguments. */
  check?: (p: ParsedArgs) => Safety;
  /** At most this many positionals, all fixed (the next one would be an output file). */
  maxPositionals?: number;
}

const WRITES = "writes a file";
const RUNS = "runs another program";

/** The named checks approval-policy.json's rules may use. */
const CHECKS: Readonly<Record<string, Pick<ReadOnlySpec, "words" | "check">>> = {
  date: { check: dateCheck },
  find: { words: findWords },
  sed: { check: sedCheck },
  dd: { check: ddCheck },
  printf: { words: printfWords },
  read: { check: readCheck },
  test: { words: testWords },
  "double-bracket": { words: doubleBracketWords },
  "git-branch": {
    check: (p) =>
      listingOnly(p, "branch", [
        "-l",
        "--list",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "-v",
        "--verbose",
      ]),
  },
  "git-tag": { check: (p) => listingOnly(p, "tag", ["-l", "--list", "-v", "--verify"]) },
  "git-stash": { check: (p) => subcommandIn(p, "stash", ["list", "show"], false) },
  "git-worktree": { check: (p) => subcommandIn(p, "worktree", ["list"], false) },
  "git-notes": { check: (p) => subcommandIn(p, "notes", ["list", "show"], true) },
  "git-remote": { check: (p) => subcommandIn(p, "remote", ["get-url"], true) },
  "git-reflog": {
    check: (p) =>
      ["expire", "delete", "drop", "write"].includes(p.positionals[0]?.value ?? "")
        ? ask(`git reflog ${p.positionals[0]?.value} changes the reflog`)
        : SAFE,
  },
  "git-symbolic-ref": {
    check: (p) => (p.positionals.length > 1 ? ask("git symbolic-ref NAME REF changes a ref") : SAFE),
  },
  "git-config": { check: configCheck },
};

/** A rule of approval-policy.json as the option scanner reads it. */
function specOf(rule: BuiltinRule): ReadOnlySpec {
  const hook = rule.check === undefined ? {} : CHECKS[rule.check];
  if (!hook) throw new Error(`approval-policy.json: no check named ${rule.check}`);
  return {
    ...(rule.any_args ? { anyArgs: true } : {}),
    ...(rule.deny ? { deny: rule.deny } : {}),
    ...(rule.short_value ? { shortValue: rule.short_value } : {}),
    ...(rule.short_attached ? { shortAttached: rule.short_attached } : {}),
    ...(rule.long_value ? { longValue: rule.long_value } : {}),
    ...(rule.max_positionals !== undefined ? { maxPositionals: rule.max_positionals } : {}),
    ...hook,
  };
}

interface Tables {
  /** Programs and builtins that only read, with the options that would make them write or run. */
  readOnly: ReadonlyMap<string, ReadOnlySpec>;
  /** The git subcommands that only read, each with the options that would write. */
  gitRead: ReadonlyMap<string, ReadOnlySpec>;
  /** Programs that always ask, with why. */
  never: Readonly<Record<string, string>>;
}

let tables: Tables | undefined;

/** approval-policy.json as lookup tables, built on the first check. */
function policyTables(): Tables {
  if (tables) return tables;
  const policy = builtinPolicy();
  const readOnly = new Map<string, ReadOnlySpec>();
  const gitRead = new Map<string, ReadOnlySpec>();
  for (const rule of policy.rules) {
    const spec = specOf(rule);
    for (const program of rule.programs) {
      if (program.startsWith("git ")) gitRead.set(program.slice(4), spec);
      else readOnly.set(program, spec);
    }
  }
  return (tables = { readOnly, gitRead, never: policy.never });
}

type Unwrapped = { inner: Word[] } | Safety;

/** Commands that run the command given in their arguments. */
const WRAPPERS: Readonly<Record<string, (args: Word[], cmd: string) => Unwrapped>> = {
  env: envWrapper,
  nice: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "n",
        longValue: ["adjustment"],
        only: ["-n", "--adjustment", ..."0123456789".split("").map((d) => `-${d}`)],
      },
      0,
    ),
  timeout: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "ks",
        longValue: ["kill-after", "signal"],
        only: ["-k", "-s", "-v", "--kill-after", "--signal", "--foreground", "--preserve-status", "--verbose"],
      },
      1,
    ),
  stdbuf: (args, cmd) =>
    afterOptions(
      args,
      cmd,
      {
        shortValue: "ioe",
        longValue: ["input", "output", "error"],
        only: ["-i", "-o", "-e", "--input", "--output", "--error"],
      },
      0,
    ),
  command: commandWrapper,
  time: (args, cmd) => onlyFlags(args, cmd, new Set(["-p"])),
  exec: (args, cmd) => onlyFlags(args, cmd, new Set()),
  xargs: (args, cmd) => afterOptions(args, cmd, XARGS, 0),
};

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh"]);
const SYSTEM_DIRS = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$/;

interface ArgvContext {
  depth: number;
  /** Set when xargs adds arguments relay cannot see: names xargs for the refusal. */
  appended: string | undefined;
}

/** One simple command's words, after assignments: resolve wrappers, then apply the command's rules. */
function checkArgv(words: Word[], ctx: ArgvContext): Safety {
  const [head, ...args] = words;
  if (!head) return ctx.appended ? ask(`${ctx.appended} would run a command made from its input`) : SAFE;
  if (!head.fixed) return ask(`the command name ${head.raw} is computed at run time`);
  const mine = userRules.find((rule) => prefixMatches(rule.prefix, words));
  if (mine)
    return mine.decision === "allow" ? SAFE : ask(mine.reason ?? `your approval rule for ${prefixText(mine)} asks`);
  const name = commandName(head.value);
  if (name === undefined) return ask(`${head.value} runs a program by its path`);
  const wrapper = WRAPPERS[name];
  if (wrapper) {
    const r = wrapper(args, name);
    if ("safe" in r) return r;
    // Without a command a wrapper only prints (env, nice, xargs's echo), unless xargs feeds it.
    if (r.inner.length === 0)
      return ctx.appended ? ask(`${ctx.appended} would run a command made from its input`) : SAFE;
    return checkArgv(r.inner, { ...ctx, appended: name === "xargs" ? "xargs" : ctx.appended });
  }
  if (ctx.appended && (SHELLS.has(name) || name === "eval" || name === "git"))
    return ask(`${ctx.appended} adds arguments to ${name} that relay cannot check`);
  if (SHELLS.has(name)) return checkShell(name, args, ctx.depth);
  if (name === "eval") return checkEval(args, ctx.depth);
  if (name === "git") return checkGit(args);
  return checkReadOnly(name, args, ctx);
}

const prefixText = (rule: UserApprovalRule) =>
  rule.prefix.map((p) => (typeof p === "string" ? p : `{${p.join(",")}}`)).join(" ");

/** The program's name: a bare name or one in a system bin directory; undefined for other paths. */
function commandName(word: string): string | undefined {
  if (!word.includes("/")) return word;
  return SYSTEM_DIRS.test(word) ? word.slice(word.lastIndexOf("/") + 1) : undefined;
}

function checkReadOnly(name: string, args: Word[], ctx: ArgvContext): Safety {
  const { readOnly, never } = policyTables();
  const spec = readOnly.get(name);
  if (!spec) return ask(never[name] ?? `${name} is not on the read-only list`);
  if (spec.anyArgs) return SAFE;
  if (ctx.appended) return ask(`${ctx.appended} adds arguments to ${name} that relay cannot check`);
  if (spec.words) return spec.words(args);
  const p = scanArgs(name, args, spec);
  if (isSafety(p)) return p;
  if (spec.maxPositionals !== undefined) {
    if (p.positionals.some((w) => !w.fixed)) return ask(`relay cannot count the files given to ${name}`);
    const extra = p.positionals[spec.maxPositionals];
    if (extra) return ask(`${name} writes its output to ${extra.raw}`);
  }
  return spec.check ? spec.check(p) : SAFE;
}

// ---------------------------------------------------------------------------------------------
// Rules of single commands

function dateCheck(p: ParsedArgs): Safety {
  const setting = p.positionals.find((w) => !w.value.startsWith("+"));
  return setting ? ask(`date ${setting.raw} sets the clock`) : SAFE;
}

const FIND_DENIED: Readonly<Record<string, string>> = {
  "-delete": "deletes files",
  "-exec": RUNS,
  "-execdir": RUNS,
  "-ok": RUNS,
  "-okdir": RUNS,
  "-fprint": WRITES,
  "-fprint0": WRITES,
  "-fprintf": WRITES,
  "-fls": WRITES,
};

/** find's expression words are single-dash words anywhere, so every word is checked. */
function findWords(args: readonly Word[]): Safety {
  for (const w of args) {
    if (!w.fixed && w.mayBeOption) return computed(w, "find");
    const what = w.fixed ? FIND_DENIED[w.value] : undefined;
    if (what) return ask(`find ${w.value} ${what}`);
  }
  return SAFE;
}

/** printf's only option is `-v VAR` (assign instead of print), and only as the first word. */
function printfWords(args: readonly Word[]): Safety {
  const f = args[0];
  if (!f || (f.fixed && !f.value.startsWith("-v"))) return SAFE;
  if (f.fixed) return ask("printf -v sets a shell variable");
  return f.mayBeOption ? computed(f, "printf") : SAFE;
}

function sedCheck(p: ParsedArgs): Safety {
  const scripts = p.options.filter((o) => o.name === "-e" || o.name === "--expression").map((o) => o.value);
  if (scripts.length === 0) {
    const script = p.positionals[0];
    if (!script) return ask("sed without a script is not understood");
    if (!script.fixed) return ask(`relay cannot check the computed sed script ${script.raw}`);
    scripts.push(script.value);
  }
  if (has(p, "--sandbox")) return SAFE;
  for (const s of scripts) {
    if (s === undefined) return ask("relay cannot check a computed sed script");
    const why = sedScriptProblem(s);
    if (why) return ask(`sed ${why}`);
  }
  return SAFE;
}

/** Why a sed script may write or run something (w, W, e, s///w, s///e), or undefined if it cannot. */
export function sedScriptProblem(script: string): string | undefined {
  const s = new SedReader(script);
  for (;;) {
    s.skipSpace(true);
    if (!s.more()) return undefined;
    s.address();
    const why = sedCommand(s.next(), s);
    if (why) return why;
  }
}

function sedCommand(c: string, s: SedReader): string | undefined {
  if ("{}".includes(c) || "pPdDnNgGhHxz=F".includes(c)) return undefined;
  if ("qQlL".includes(c)) return s.skip(/^\s*[0-9]*/);
  if ("#:btTv".includes(c) || "aicrR".includes(c)) return s.skipLine(c);
  if (c === "s") return s.substitute();
  if (c === "y") return s.delimited(2) ? undefined : "y command is not understood";
  if (c === "w" || c === "W") return `${c} writes a file`;
  if (c === "e") return "e runs a command";
  return `command ${JSON.stringify(c)} is not understood`;
}

/** A cursor over a sed script. */
class SedReader {
  private i = 0;
  constructor(private readonly s: string) {}

  more(): boolean {
    return this.i < this.s.length;
  }

  next(): string {
    return this.s.charAt(this.i++);
  }

  skip(re: RegExp): undefined {
    this.i += re.exec(this.s.slice(this.i))?.[0].length ?? 0;
    return undefined;
  }

  skipSpace(separators: boolean): void {
    this.skip(separators ? /^[\s;]*/ : /^[ \t]*/);
  }

  /** Labels run to `;` or the line's end; comments and text to the line's end (`a\` text may continue). */
  skipLine(c: string): undefined {
    if ("btTv:".includes(c)) return this.skip(/^[^;\n}]*/);
    return this.skip(c === "#" ? /^[^\n]*/ : /^(\\\n|[^\n\\]|\\[^\n])*/);
  }

  /** `[addr[,addr]][!]`; addresses are numbers, `$`, `first~step`, `+N`, `/re/` or `\cREc`. */
  address(): void {
    for (let part = 0; part < 2; part++) {
      this.skip(/^[0-9]+(~[0-9]+)?|^\$|^[+~][0-9]+/);
      const c = this.s.charAt(this.i);
      if (c === "/" || c === "\\") {
        if (c === "\\") this.i++;
        this.until(this.next());
        this.skip(/^[IM]*/);
      }
      this.skipSpace(false);
      if (this.s.charAt(this.i) !== ",") break;
      this.i++;
      this.skipSpace(false);
    }
    this.skip(/^[\s!]*/);
  }

  /** Reads past the next unescaped `delim`; false if it never comes. */
  until(delim: string): boolean {
    while (this.more()) {
      const c = this.next();
      if (c === "\\") this.i++;
      else if (c === delim) return true;
    }
    return false;
  }

  delimited(parts: number): boolean {
    const delim = this.next();
    if (delim === "" || delim === "\n" || delim === "\\") return false;
    for (let k = 0; k < parts; k++) if (!this.until(delim)) return false;
    return true;
  }

  /** After `s`: pattern, replacement and flags; the w and e flags write or run. */
  substitute(): string | undefined {
    if (!this.delimited(2)) return "s command is not understood";
    for (;;) {
      const f = this.s.charAt(this.i);
      if (f === "w") return "s///w writes a file";
      if (f === "e") return "s///e runs a command";
      if (f === "" || !/[gpiImM0-9]/.test(f)) return undefined;
      this.i++;
    }
  }
}

const DD_READ_OPERANDS = new Set([
  "if",
  "bs",
  "ibs",
  "obs",
  "cbs",
  "count",
  "skip",
  "iseek",
  "status",
  "iflag",
  "conv",
]);

function ddCheck(p: ParsedArgs): Safety {
  for (const w of p.positionals) {
    if (!w.fixed) return ask(`relay cannot check the computed dd operand ${w.raw}`);
    const key = w.value.split("=")[0] ?? "";
    if (key === "of" || key === "seek" || key === "oseek" || key === "oflag") return ask(`dd ${key}= writes a file`);
    if (!w.value.includes("=") || !DD_READ_OPERANDS.has(key)) return ask(`dd operand ${w.raw} is not understood`);
  }
  return SAFE;
}

/** `read` assigns to the names it is given; they must be harmless to set. */
function readCheck(p: ParsedArgs): Safety {
  const names = [
    ...p.positionals.map((w) => (w.fixed ? w.value : "")),
    ...p.options.filter((o) => o.name === "-a").map((o) => o.value ?? ""),
  ];
  for (const n of names) {
    if (!SHELL_NAME.test(n)) return ask(`read into ${n || "a computed name"} is not understood`);
    const v = checkVariable(n);
    if (!v.safe) return v;
  }
  return SAFE;
}

const TEST_BINARY = new Set([
  "=",
  "==",
  "!=",
  "<",
  ">",
  "-eq",
  "-ne",
  "-lt",
  "-le",
  "-gt",
  "-ge",
  "-nt",
  "-ot",
  "-ef",
  "-a",
  "-o",
]);
const ARITHMETIC_COMPARE = new Set(["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]);
const isFixed = (w: Word | undefined, ...values: string[]): boolean => w?.fixed === true && values.includes(w.value);

/** `-v NAME[SUBSCRIPT]` evaluates the subscript as arithmetic, and `a[$(cmd)]` there runs cmd. */
function testVariableCheck(cmd: string, args: readonly Word[]): Safety {
  for (let i = 0; i < args.length; i++) {
    const operand = args[i + 1];
    if (isFixed(args[i], "-v") && !(operand?.fixed && SHELL_NAME.test(operand.value))) {
      return ask(`${cmd} -v ${operand?.raw ?? ""} evaluates an array subscript, which can run commands`);
    }
  }
  return SAFE;
}

/**
 * `test` and `[`: operators are plain words, so a computed word where an operator may stand
 * could be `-v` (above); where each operator stands follows from the number of arguments.
 */
function testWords(all: readonly Word[]): Safety {
  const args = isFixed(all.at(-1), "]") ? all.slice(0, -1) : all;
  const split = args.find((w) => w.splits);
  if (split) return ask(`relay cannot count the arguments of test: ${split.raw} may split into several`);
  const v = testVariableCheck("test", args);
  if (!v.safe) return v;
  const [a, b, c, d] = args;
  const n = args.length;
  const operatorsFixed =
    n <= 1 ||
    (n === 2 && a!.fixed) ||
    (n === 3 &&
      (isFixed(b, ...TEST_BINARY) || (isFixed(a, "!") && b!.fixed) || (isFixed(a, "(") && isFixed(c, ")")))) ||
    (n === 4 && ((isFixed(a, "!") && isFixed(c, ...TEST_BINARY)) || (isFixed(a, "(") && isFixed(d, ")") && b!.fixed)));
  const computedWord = args.find((w) => !w.fixed);
  return operatorsFixed || !computedWord
    ? SAFE
    : ask(`relay cannot tell whether ${computedWord.raw} is an operator of test`);
}

/** `[[ ]]`: operators are syntax, but `-eq` and its kin evaluate their operands as arithmetic. */
function doubleBracketWords(args: readonly Word[]): Safety {
  const v = testVariableCheck("[[", args);
  if (!v.safe) return v;
  for (let i = 0; i < args.length; i++) {
    if (!isFixed(args[i], ...ARITHMETIC_COMPARE)) continue;
    const operand = [args[i - 1], args[i + 1]].find((w) => !(w?.fixed && /^[+-]?[0-9]+$/.test(w.value)));
    if (operand)
      return ask(
        `[[ ${args[i]!.value} ]] evaluates ${operand.raw} as arithmetic, and a variable's value there can run commands`,
      );
  }
  return SAFE;
}

// ---------------------------------------------------------------------------------------------
// Wrappers and nested scripts

/** Where the command starts after a wrapper's options; those options must all be in `spec.only`. */
function leadingOptions(args: readonly Word[], cmd: string, spec: OptionSpec): number | Safety {
  let i = 0;
  while (i < args.length) {
    const w = args[i] as Word;
    if (!w.fixed) return w.mayBeOption ? computed(w, cmd) : i;
    if (w.value === "--") return i + 1;
    if (w.value === "-" || !w.value.startsWith("-")) return i;
    const out: ParsedArgs = { positionals: [], options: [] };
    const r = w.value.startsWith("--") ? scanLong(cmd, w.value, spec, out) : scanShort(cmd, w.value, spec, out);
    if (typeof r !== "string") return r;
    i += r === "next" ? 2 : 1;
  }
  return i;
}

/** Options, then `skip` positionals (timeout's duration), then the command. */
function afterOptions(args: Word[], cmd: string, spec: OptionSpec, skip: number): Unwrapped {
  const i = leadingOptions(args, cmd, spec);
  if (typeof i !== "number") return i;
  if (args.length - i < skip) return ask(`${cmd} without a command is not understood`);
  return { inner: args.slice(i + skip) };
}

function onlyFlags(args: Word[], cmd: string, flags: ReadonlySet<string>): Unwrapped {
  let i = 0;
  for (; i < args.length && (args[i] as Word).value.startsWith("-"); i++) {
    const w = args[i] as Word;
    if (!w.fixed || !flags.has(w.value)) return ask(`${cmd} ${w.raw} is not understood`);
  }
  return { inner: args.slice(i) };
}

/** `env [-i] [-u NAME] [NAME=VALUE]... [command]`; other options (-S, -C) ask. */
function envWrapper(args: Word[]): Unwrapped {
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed) return computed(w, "env");
    const v = w.value;
    if (["-i", "--ignore-environment", "-", "-0", "--null"].includes(v) || v.startsWith("--unset=") || /^-u./.test(v))
      continue;
    if (v === "-u" || v === "--unset") {
      i++;
      continue;
    }
    if (v === "--") return { inner: args.slice(i + 1) };
    if (v.startsWith("-")) return ask(`env ${v} is not understood`);
    const assign = /^([^=]+)=/.exec(v);
    if (!assign?.[1]) break;
    const ok = checkVariable(assign[1], w);
    if (!ok.safe) return ok;
  }
  return { inner: args.slice(i) };
}

/** `command -v/-V NAME` only looks up; `command [-p] CMD` runs CMD. */
function commandWrapper(args: Word[]): Unwrapped {
  let i = 0;
  for (; i < args.length && (args[i] as Word).value.startsWith("-"); i++) {
    const w = args[i] as Word;
    if (w.fixed && w.value === "--") return { inner: args.slice(i + 1) };
    if (!w.fixed || !/^-[pvV]+$/.test(w.value)) return ask(`command ${w.raw} is not understood`);
    if (/[vV]/.test(w.value)) return SAFE;
  }
  return { inner: args.slice(i) };
}

/** GNU xargs options; -e, -i and -l take only an attached value. */
const XARGS: OptionSpec = {
  shortValue: "adEILnPs",
  shortAttached: "eil",
  longValue: ["arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars"],
  only: [
    ..."0adEeIiLlnPprstxo".split("").map((c) => `-${c}`),
    ...[
      "null",
      "arg-file",
      "delimiter",
      "eof",
      "replace",
      "max-lines",
      "max-args",
      "max-procs",
      "interactive",
      "no-run-if-empty",
      "max-chars",
      "verbose",
      "exit",
      "open-tty",
      "show-limits",
    ].map((o) => `--${o}`),
  ],
};

/** Options a shell may get before `-c`: ones that change no files and run nothing else. */
const SHELL_FLAGS = /^-[celuxvE]+$/;
const SHELL_LONG = new Set(["--login", "--noprofile", "--norc", "--posix"]);
const SHELL_SET_O = new Set(["pipefail", "errexit", "nounset", "xtrace", "posix"]);

/** `bash -c SCRIPT [NAME ARGS...]`: the script is parsed and checked like the outer command. */
function checkShell(name: string, args: Word[], depth: number): Safety {
  let dashC = false;
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed) return computed(w, name);
    if (w.value === "-o" || w.value === "+o") {
      if (!SHELL_SET_O.has(args[i + 1]?.value ?? ""))
        return ask(`${name} ${w.value} ${args[i + 1]?.raw ?? ""} is not understood`);
      i++;
    } else if (SHELL_FLAGS.test(w.value)) dashC ||= w.value.includes("c");
    else if (!SHELL_LONG.has(w.value)) {
      if (w.value.startsWith("-") || w.value.startsWith("+")) return ask(`${name} ${w.value} is not understood`);
      break;
    }
  }
  if (!dashC) return ask(`${name} without -c runs a script relay cannot see`);
  const script = args[i];
  if (!script) return ask(`${name} -c without a script is not understood`);
  if (!script.fixed) return ask(`relay cannot check the computed script ${script.raw} of ${name} -c`);
  return nestedScript(`${name} -c`, script.value, depth);
}

function checkEval(args: Word[], depth: number): Safety {
  const dynamic = args.find((w) => !w.fixed);
  if (dynamic) return computed(dynamic, "eval");
  return nestedScript("eval", args.map((w) => w.value).join(" "), depth);
}

function nestedScript(what: string, src: string, depth: number): Safety {
  if (depth + 1 > MAX_DEPTH) return ask("the command nests scripts too deeply to analyse");
  let script: Script;
  try {
    script = parse(src);
  } catch (e) {
    return ask(`relay could not analyse the script of ${what} (${e instanceof Error ? e.message : String(e)})`);
  }
  return within(what, checkScript(script, depth + 1));
}

// ---------------------------------------------------------------------------------------------
// git

const GIT_GLOBAL_VALUE = new Set(["-C", "--git-dir", "--work-tree", "--namespace"]);
const GIT_GLOBAL_FLAG = new Set([
  "--no-pager",
  "-P",
  "--paginate",
  "-p",
  "--bare",
  "--no-replace-objects",
  "--literal-pathspecs",
  "--glob-pathspecs",
  "--noglob-pathspecs",
  "--icase-pathspecs",
  "--no-optional-locks",
  "--version",
  "--help",
]);
/** `git branch NAME` and `git tag NAME` create; with a listing option the names are patterns. */
function listingOnly(p: ParsedArgs, sub: string, listing: string[]): Safety {
  const created = p.positionals[0];
  if (!created || has(p, ...listing)) return SAFE;
  return ask(`git ${sub} ${created.raw} ${sub === "branch" ? "changes branches" : "changes tags"}`);
}

/** The first positional must be one of `allowed`; `bare` allows none at all (plain listing). */
function subcommandIn(p: ParsedArgs, sub: string, allowed: string[], bare: boolean): Safety {
  const sub2 = p.positionals[0];
  if (!sub2) return bare ? SAFE : ask(`git ${sub} without a subcommand changes the repository`);
  if (sub2.fixed && allowed.includes(sub2.value)) return SAFE;
  return ask(`git ${sub} ${sub2.raw} may change the repository`);
}

function configCheck(p: ParsedArgs): Safety {
  const head = p.positionals[0]?.value;
  if (head === "get" || head === "list") return SAFE;
  if (p.options.some((o) => o.name.startsWith("--get") || o.name === "--list" || o.name === "-l")) return SAFE;
  if (p.positionals.length === 1 && head && /^[A-Za-z0-9.-]+\.[A-Za-z0-9-]+$/.test(head)) return SAFE;
  return ask("git config with these arguments changes the configuration");
}

function checkGit(args: Word[]): Safety {
  let i = 0;
  for (; i < args.length; i++) {
    const w = args[i] as Word;
    if (!w.fixed) return computed(w, "git");
    const key = w.value.split("=")[0] ?? "";
    if (GIT_GLOBAL_FLAG.has(w.value)) continue;
    if (GIT_GLOBAL_VALUE.has(key)) {
      if (!w.value.includes("=")) i++;
      continue;
    }
    if (key === "-c" || key === "--config-env" || key === "--exec-path")
      return ask(`git ${key} can set options that run programs`);
    if (w.value.startsWith("-")) return ask(`git ${w.value} is not understood`);
    break;
  }
  const sub = args[i];
  if (!sub) return SAFE;
  const spec = policyTables().gitRead.get(sub.value);
  if (!spec) return ask(`git ${sub.value} may change the repository`);
  const p = scanArgs(`git ${sub.value}`, args.slice(i + 1), spec);
  if (isSafety(p)) return p;
  return spec.check ? spec.check(p) : SAFE;
}
