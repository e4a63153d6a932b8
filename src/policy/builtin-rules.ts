/**
 * The built-in approval policy as data: approval-policy.json says which programs only read, and
 * the options that would make them write or run another program. Every rule carries examples,
 * which the test suite checks (test/policy/approval-policy.test.ts). A user's own rules are
 * config/approval-rules.ts.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
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
      /** A named check (safety/policy-tables.ts's CHECKS) for what options alone cannot say. */
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
