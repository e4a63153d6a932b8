/**
 * The JSON contracts between roles. The Solver signals what it needs; the Director answers
 * with a directive; Verifiers answer with a verdict. Each contract exists twice, from one
 * list of fields: a strict JSON schema sent as structured output, and a lenient reader for
 * what comes back. The reader applies one rule to every role: unknown fields are ignored,
 * `null` is taken as absent, enum words are matched without regard to case, and a lone
 * string stands for a one-item list.
 */
import { z } from "zod";
import type { OutputSchema } from "../model/client.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { jsonObjectsIn } from "./json-in-text.ts";

/** Drops null fields, trims and lower-cases the enum fields, so every role is read the same way. */
function lenient(enumKeys: string[]) {
  return (v: unknown): unknown => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (x === null) continue;
      out[k] =
        enumKeys.includes(k) && typeof x === "string"
          ? x
              .trim()
              .toLowerCase()
              .replace(/[\s-]+/g, "_")
          : x;
    }
    return out;
  };
}

const text = (what: string) => z.string().trim().min(1, `${what} must not be empty`);
const optionalText = lazySchema(() =>
  z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v : null)),
);
const stringList = lazySchema(() => z.preprocess((v) => (typeof v === "string" ? [v] : v), z.array(z.string())));

export const SOLVER_SIGNAL_TYPES = ["direction_request", "verification_request", "final_delivery"] as const;

export const SolverSignalSchema = lazySchema(() =>
  z.preprocess(
    lenient(["type"]),
    z.discriminatedUnion("type", [
      z.object({ type: z.literal("direction_request"), prompt: text("prompt") }),
      z.object({ type: z.literal("verification_request"), claim_path: text("claim_path"), notes: optionalText }),
      z.object({
        type: z.literal("final_delivery"),
        deliverable_path: text("deliverable_path"),
        summary: optionalText,
      }),
    ]),
  ),
);
export type SolverSignal = z.output<typeof SolverSignalSchema>;

export const DirectiveSchema = lazySchema(() =>
  z.preprocess(lenient([]), z.object({ directive: text("directive"), rationale: optionalText })),
);
export type Directive = z.output<typeof DirectiveSchema>;

export const VerdictSchema = lazySchema(() =>
  z.preprocess(
    lenient(["verdict"]),
    z.object({
      verdict: z.enum(["pass", "fail"]),
      reasons: stringList.default([]),
      suggestions: stringList.default([]),
    }),
  ),
);
export type Verdict = z.output<typeof VerdictSchema>;

const nullableString = { type: ["string", "null"] };
const strictObject = (properties: Record<string, unknown>) => ({
  type: "object",
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});

/** Structured-output schemas: the strict subset (all fields required, unused ones null). */
export const OUTPUT_SCHEMAS = {
  solver: {
    name: "solver_signal",
    schema: strictObject({
      type: { type: "string", enum: [...SOLVER_SIGNAL_TYPES] },
      prompt: nullableString,
      claim_path: nullableString,
      notes: nullableString,
      deliverable_path: nullableString,
      summary: nullableString,
    }),
  },
  director: { name: "directive", schema: strictObject({ directive: { type: "string" }, rationale: nullableString }) },
  verifier: {
    name: "verdict",
    schema: strictObject({
      verdict: { type: "string", enum: ["pass", "fail"] },
      reasons: { type: "array", items: { type: "string" } },
      suggestions: { type: "array", items: { type: "string" } },
    }),
  },
} satisfies Record<string, OutputSchema>;

/** The shapes quoted to a role whose reply could not be used. */
export const SHAPES = {
  solver: `{"type": "direction_request" | "verification_request" | "final_delivery", "prompt": string|null, "claim_path": string|null, "notes": string|null, "deliverable_path": string|null, "summary": string|null}`,
  director: `{"directive": "<what the Solver should do>", "rationale": "<why>"|null}`,
  verifier: `{"verdict": "pass" | "fail", "reasons": ["..."], "suggestions": ["..."]}`,
} as const;

/**
 * Reads a contract from a reply: the first JSON object in it (see jsonObjectsIn) that fits.
 * The error says what was wrong in words a model can act on.
 */
export function readContract<T extends z.ZodType>(schema: T, reply: string): Result<z.output<T>> {
  const objects = jsonObjectsIn(reply);
  if (objects.length === 0) return err("no_json", "your reply had no JSON object");
  let first: z.ZodError | undefined;
  for (const o of objects) {
    const r = schema.safeParse(o);
    if (r.success) return ok(r.data);
    first ??= r.error;
  }
  const issues = first!.issues.map((i) => `${i.path.join(".") || "the object"}: ${i.message}`);
  return err("contract_mismatch", `your JSON object does not match the contract (${issues.join("; ")})`);
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
