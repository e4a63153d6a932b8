/** JSON text checked against a zod schema, as one Result with a message that names what was read. */
import type { z } from "zod";
import { err, ok, type Result } from "./result.ts";

export function parseJsonWith<S extends z.ZodType>(schema: S, text: string, what: string): Result<z.infer<S>> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return err("invalid_json", `${what} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
    return err("invalid_shape", `${what} has the wrong shape${where}: ${issue?.message ?? "invalid"}`);
  }
  return ok(parsed.data);
}
