/**
 * The approval policy as data: the built-in rules (approval-policy.json: which programs only
 * read, and the options that would make them write or run another program) and the user's own
 * (`[[approval_rules]]` in config.toml: a command prefix that runs without asking, or always
 * asks). Every rule carries examples; the built-in ones are checked by the test suite, a user's
 * when the config loads, so a rule that does not do what its author meant is an error.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { type Command, parseShell, type Word } from "../util/shell-parse.ts";
import policyData from "./approval-policy.json" with { type: "json" };

/** One built-in rule: programs (or `git SUBCOMMAND`s) that only read, and how to read their options. */
export const BuiltinRuleSchema = lazySchema(() =>
  z
    .object({
      programs: z.array(z.string().min(1)).min(1),
      /** No argument can make it write or run anything, computed ones included. */
      any_args: z.boolean().optional(),
      /** Options that make it write or run a program, with the reason the prompt shows. */
      deny: z.record(z.string().regex(/^-/, "an option starts with -"), z.string().min(1)).optional(),
      /** Short options whose value follows (attached or as the next word). */
      short_value: z.string().optional(),
      /** Short options whose value, if any, is attached (`-Iseconds`). */
      short_attached: z.string().optional(),
      /** Long options (without --) whose value may be the next word. */
      long_value: z.array(z.string().min(1)).optional(),
      /** At most this many positionals: the next would be an output file. */
      max_positionals: z.number().int().min(0).optional(),
      /** A named check in command-safety.ts for what options alone cannot say. */
      check: z.string().min(1).optional(),
      /** Commands this rule lets run without asking. */
      runs: z.array(z.string().min(1)).min(1),
      /** Commands that must still ask. */
      asks: z.array(z.string().min(1)).default([]),
    })
    .strict(),
);
export type BuiltinRule = z.infer<typeof BuiltinRuleSchema>;

export const BuiltinPolicySchema = lazySchema(() =>
  z
    .object({
      $comment: z.string().optional(),
      rules: z.array(BuiltinRuleSchema),
      never: z.record(z.string(), z.string()),
    })
    .strict(),
);
export type BuiltinPolicy = z.infer<typeof BuiltinPolicySchema>;

let builtin: BuiltinPolicy | undefined;

/** approval-policy.json, checked on first use (a broken file is a bug: it throws). */
export function builtinPolicy(): BuiltinPolicy {
  return (builtin ??= BuiltinPolicySchema.parse(policyData));
}

/** A word of a user rule's prefix: one word, or any of a list. */
const PrefixWordSchema = lazySchema(() => z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]));

/** `[[approval_rules]]` in config.toml. */
export const UserApprovalRuleSchema = lazySchema(() =>
  z
    .object({
      /** The words a command starts with, e.g. ["npm", "test"] or ["make", ["test", "check"]]. */
      prefix: z.array(PrefixWordSchema).min(1),
      /** allow: runs without asking under untrusted; ask: always asks, even a read-only command. */
      decision: z.enum(["allow", "ask"]),
      /** Why, shown when it asks. */
      reason: z.string().min(1).optional(),
      /** Commands the rule must match, and commands it must not: checked when the config loads. */
      match: z.array(z.string().min(1)).default([]),
      not_match: z.array(z.string().min(1)).default([]),
    })
    .strict()
    .superRefine((rule, ctx) => {
      for (const [key, want] of [
        ["match", true],
        ["not_match", false],
      ] as const) {
        rule[key].forEach((example, i) => {
          const got = exampleMatches(rule.prefix, example);
          if (typeof got === "string")
            ctx.addIssue({ code: "custom", path: [key, i], message: `${JSON.stringify(example)}: ${got}` });
          else if (got !== want)
            ctx.addIssue({
              code: "custom",
              path: [key, i],
              message: `the rule ${got ? "matches" : "does not match"} ${JSON.stringify(example)}`,
            });
        });
      }
    }),
);
export type UserApprovalRule = z.infer<typeof UserApprovalRuleSchema>;

/** Whether `words` (a simple command's, fixed) start with the rule's prefix. */
export function prefixMatches(prefix: UserApprovalRule["prefix"], words: readonly Word[]): boolean {
  if (words.length < prefix.length) return false;
  return prefix.every((p, i) => {
    const w = words[i]!;
    return w.fixed && (typeof p === "string" ? w.value === p : p.includes(w.value));
  });
}

/** An example is one simple command: true/false, or why it cannot be one. */
function exampleMatches(prefix: UserApprovalRule["prefix"], example: string): boolean | string {
  let commands: Command[];
  try {
    commands = parseShell(example).commands;
  } catch (e) {
    return `not a command relay can read: ${(e as Error).message}`;
  }
  const only = commands.length === 1 ? commands[0] : undefined;
  if (only?.type !== "simple") return "an example must be one simple command";
  return prefixMatches(prefix, only.words);
}
