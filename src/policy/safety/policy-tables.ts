/**
 * approval-policy.json as lookup tables: each rule becomes the spec the option scanner reads,
 * with the named check it refers to.
 */

import type { Word } from "../../util/shell-ast.ts";
import { type BuiltinRule, builtinPolicy } from "../builtin-rules.ts";
import {
  dateCheck,
  ddCheck,
  doubleBracketWords,
  findWords,
  printfWords,
  readCheck,
  testWords,
} from "./command-checks.ts";
import { configCheck, listingOnly, subcommandIn } from "./git-checks.ts";
import type { OptionSpec, ParsedArgs } from "./options.ts";
import { sedCheck } from "./sed.ts";
import { ask, SAFE, type Safety } from "./verdict.ts";

export interface ReadOnlySpec extends OptionSpec {
  /** No argument can make it write or run anything, so computed arguments are fine too. */
  anyArgs?: boolean;
  /** For a command that does not parse options getopt-style: decides from its words alone. */
  words?: (args: readonly Word[]) => Safety;
  /** More rules on the parsed arguments. */
  check?: (p: ParsedArgs) => Safety;
  /** At most this many positionals, all fixed (the next one would be an output file). */
  maxPositionals?: number;
}

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
export function policyTables(): Tables {
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
