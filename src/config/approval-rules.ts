/**
 * A user's approval rules (`[[approval_rules]]` in config.toml): a command prefix that runs
 * without asking under untrusted, or always asks. Each rule's `match`/`not_match` examples are
 * checked when the config loads, so a rule that does not do what its author meant is an error.
 * The built-in rules are policy/builtin-rules.ts.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { type Command, parseShell, type Word } from "../util/shell-parse.ts";

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
