/** Function-tool arguments as the model sent them: JSON text, where empty text means `{}`. */
import { err, ok, type Result } from "../util/result.ts";

export function parseToolArguments(rawArguments: string): Result<unknown> {
  try {
    return ok(rawArguments.trim() === "" ? {} : JSON.parse(rawArguments));
  } catch (e) {
    return err("bad_arguments", `failed to parse function arguments: ${(e as Error).message}`);
  }
}
