/**
 * Is a shell command known to only read? The `untrusted` approval policy runs such commands
 * without asking and asks for everything else. The command is parsed with the maintained bash
 * grammar (src/util/shell-tree.ts; loadBashGrammar() must have been awaited first) and every
 * simple command in it, including those in substitutions and in `bash -c` scripts, must be on
 * the read-only list (approval-policy.json, as safety/policy-tables.ts reads it) without any of
 * its write-capable options, and every redirection must only read or go to /dev/null. Anything
 * not understood asks (fails closed). A refusal says why, for the approval prompt.
 *
 * This module walks the script; the parts of the verdict are in safety/: the option scanner
 * (options.ts), the named checks of single commands (command-checks.ts, sed.ts, git-checks.ts),
 * wrappers that run another command (wrappers.ts), git (git.ts) and shell variables
 * (variables.ts).
 */

import { prefixMatches, type UserApprovalRule } from "../config/approval-rules.ts";
import { loadedBashGrammar } from "../util/bash-grammar.ts";
import type { Command, Redirect, Script, SimpleCommand, Word } from "../util/shell-ast.ts";
import { parseShellTree } from "../util/shell-tree.ts";
import { checkGit } from "./safety/git.ts";
import { computed, isSafety, scanArgs } from "./safety/options.ts";
import { policyTables } from "./safety/policy-tables.ts";
import { checkVariable } from "./safety/variables.ts";
import { ask, first, MAX_DEPTH, SAFE, type Safety, within } from "./safety/verdict.ts";
import { WRAPPERS } from "./safety/wrappers.ts";

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
// Redirections

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

// ---------------------------------------------------------------------------------------------
// Commands

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
// Nested scripts

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
