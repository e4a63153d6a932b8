/** Paths the roles give, resolved through every symlink and refused unless they stay inside a root. */

import { realpath } from "node:fs/promises";
import path from "node:path";
import { isInside } from "../util/paths.ts";
import { err, ok, type Result } from "../util/result.ts";

/** `p` (relative to `root`, or absolute) resolved through every symlink; an error unless it exists inside `root`. */
export async function resolveWithin(root: string, p: string, what: string): Promise<Result<string>> {
  const abs = path.resolve(root, p);
  if (!isInside(abs, root))
    return err("escapes_run_store", `${p} is outside ${what}; use a path inside it (relative to ${root})`);
  let real: string;
  try {
    real = await realpath(abs);
  } catch {
    return err("not_found", `${p} does not exist in ${what} (${root})`);
  }
  if (!isInside(real, await realpath(root)))
    return err(
      "escapes_run_store",
      `${p} leads outside ${what} through a symlink (to ${real}); copy the file into ${what} instead of linking to it`,
    );
  return ok(real);
}
