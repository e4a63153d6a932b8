/** JSON text checked against its zod schema, with messages that say where the text came from. */
import { z } from "zod";
import { err, ok, type Result } from "./result.ts";

export interface ParseJsonOptions {
  /** The error code of both failures. */
  code: string;
  /** What the text is when the schema refuses it, after `where` (e.g. "does not match the run format"). */
  invalid?: string;
  /** Said after either message (e.g. what was not touched). */
  note?: string;
}

/** `where` names the text in messages: "<where> is not valid JSON: …" or "<where> <invalid>: <issues>". */
export function parseJsonWith<S extends z.ZodType>(schema: S, text: string, where: string, o: ParseJsonOptions): Result<z.output<S>> {
  const tail = o.note ? `; ${o.note}` : "";
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return err(o.code, `${where} is not valid JSON: ${(e as Error).message}${tail}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return err(o.code, `${where} ${o.invalid ?? "is invalid"}: ${z.prettifyError(parsed.error)}${tail}`);
  return ok(parsed.data);
}
