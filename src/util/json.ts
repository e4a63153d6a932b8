/** JSON text checked against its zod schema, with messages that say where the text came from. */
import type { z } from "zod";
import { err, ok, type Result } from "./result.ts";
import { describeIssues } from "./schema-issues.ts";

export interface ParseJsonOptions {
  /** The error code of both failures. */
  code: string;
  /** What the text is when the schema refuses it, after `where` (e.g. "does not match the run format"). */
  invalid?: string;
  /** Said after either message (e.g. what was not touched). */
  note?: string;
  /** What to do about fields the schema refuses; `{fields}` becomes their key paths. */
  fix?: string;
}

/**
 * `where` names the text in messages: "<where> is not valid JSON: …" or "<where> <invalid>:"
 * followed by one problem per field (`max_turns must be at least 1 (got 0)`) and the fix.
 */
export function parseJsonWith<S extends z.ZodType>(
  schema: S,
  text: string,
  where: string,
  o: ParseJsonOptions,
): Result<z.output<S>> {
  const tail = o.note ? `; ${o.note}` : "";
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return err(o.code, `${where} is not valid JSON: ${(e as Error).message}${tail}`);
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return ok(parsed.data);
  const issues = describeIssues(parsed.error.issues, raw, { objectName: "an object" });
  const list = issues.length === 1 ? ` ${issues[0]!.message}` : issues.map((i) => `\n  - ${i.message}`).join("");
  const fix = o.fix ? `\n${o.fix.replace("{fields}", [...new Set(issues.map((i) => i.key))].join(", "))}` : "";
  return err(o.code, `${where} ${o.invalid ?? "is invalid"}:${list}${tail}${fix}`, { issues });
}
