/** execvp's lookup, done before confining so a missing program gets the shell's 127. */
import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import { err, ok, type Result } from "../../../util/result.ts";

function executableFile(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The absolute path `name` runs as, searching `PATH` when it has no slash. */
export function resolveProgram(name: string, pathVar: string | undefined, cwd: string): Result<string> {
  if (name === "") return err("not_found", "the command is empty");
  if (name.includes("/")) {
    const abs = path.resolve(cwd, name);
    return executableFile(abs) ? ok(abs) : err("not_found", `${name}: no such executable file`);
  }
  for (const dir of (pathVar ?? "/usr/local/bin:/usr/bin:/bin").split(":")) {
    const candidate = path.resolve(cwd, dir || ".", name);
    if (executableFile(candidate)) return ok(candidate);
  }
  return err("not_found", `${name}: command not found`);
}
