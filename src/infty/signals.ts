/**
 * The JSON contracts between roles. The Solver signals what it needs; the Director answers
 * with a directive; Verifiers answer with a verdict. A message that does not parse is not a
 * signal (ordinary chatter), except where a reply is required, which gets one corrective retry.
 */
import { z } from "zod";
import { err, ok, type Result } from "../util/result.ts";

const nullableString = z.string().nullable().optional().transform((v) => v ?? null);

export const SolverSignalSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("direction_request"), prompt: z.string().min(1, "prompt must not be empty") }).passthrough(),
  z.object({ type: z.literal("verification_request"), claim_path: z.string().min(1, "claim_path must not be empty"), notes: nullableString }).passthrough(),
  z.object({ type: z.literal("final_delivery"), deliverable_path: z.string().min(1, "deliverable_path must not be empty"), summary: nullableString }).passthrough(),
]);
export type SolverSignal = z.infer<typeof SolverSignalSchema>;

export const DirectiveSchema = z.object({ directive: z.string().min(1), rationale: z.string().nullable().optional() }).strict();
export type Directive = z.infer<typeof DirectiveSchema>;

export const VerdictSchema = z
  .object({ verdict: z.enum(["pass", "fail"]), reasons: z.array(z.string()), suggestions: z.array(z.string()).default([]) })
  .strict();
export type Verdict = z.infer<typeof VerdictSchema>;

/** The whole message as JSON, or the inside of one ```json fence around the whole message. */
export function extractJson(text: string): unknown {
  const t = text.trim();
  try {
    return JSON.parse(t);
  } catch {
    const fence = /^```(?:json|JSON)?\s*\n([\s\S]*?)\n?```$/.exec(t);
    if (!fence) return undefined;
    try {
      return JSON.parse(fence[1]!);
    } catch {
      return undefined;
    }
  }
}

export function parseSolverSignal(text: string): SolverSignal | undefined {
  const v = extractJson(text);
  const r = SolverSignalSchema.safeParse(v);
  return r.success ? r.data : undefined;
}

export function parseReply<T extends z.ZodType>(schema: T, text: string, what: string): Result<z.output<T>> {
  const v = extractJson(text);
  if (v === undefined) return err("malformed_reply", `the ${what} reply is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  const r = schema.safeParse(v);
  if (!r.success) return err("malformed_reply", `the ${what} reply does not match the contract: ${z.prettifyError(r.error)}`);
  return ok(r.data);
}

export interface RoleVerdict extends Verdict {
  role: string;
}

export function aggregate(verdicts: RoleVerdict[], consensus: "all" | "majority"): "pass" | "fail" {
  if (verdicts.length === 0) return "pass";
  const passes = verdicts.filter((v) => v.verdict === "pass").length;
  if (consensus === "all") return passes === verdicts.length ? "pass" : "fail";
  return passes * 2 > verdicts.length ? "pass" : "fail";
}
