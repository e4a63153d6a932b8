/** Finding programs: one PATH search for everything that looks a program up (no zod: the sandbox helper uses it). */
import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import { err, ok, type Result } from "./result.ts";

/**
 * A regular file this process may execute (on Windows: one that exists). A missing file is
 * told without an exception: a PATH search misses in most directories, and a thrown error
 * costs a stack trace each time (20–130 µs).
 */
export function isExecutableFile(p: string): boolean {
  try {
    if (!statSync(p, { throwIfNoEntry: false })?.isFile()) return false;
    accessSync(p, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first `name` (with each of `exts`) in the directories of `pathVar`. An empty entry is
 * the cwd where `cwd` is given (as execvp reads it), else skipped.
 */
export function findOnPath(
  name: string,
  pathVar: string | undefined,
  o: { cwd?: string; exts?: readonly string[] } = {},
): string | undefined {
  const exts = o.exts ?? (process.platform === "win32" ? [".exe", ".cmd", ""] : [""]);
  for (const dir of (pathVar ?? "").split(path.delimiter)) {
    if (!dir && o.cwd === undefined) continue;
    for (const ext of exts) {
      const candidate = path.resolve(o.cwd ?? "/", dir || ".", name + ext);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

/** execvp's lookup: the absolute path `name` runs as, searching `PATH` when it has no slash. */
export function resolveProgram(name: string, pathVar: string | undefined, cwd: string): Result<string> {
  if (name === "") return err("not_found", "the command is empty");
  if (name.includes("/")) {
    const abs = path.resolve(cwd, name);
    return isExecutableFile(abs) ? ok(abs) : err("not_found", `${name}: no such executable file`);
  }
  const found = findOnPath(name, pathVar ?? "/usr/local/bin:/usr/bin:/bin", { cwd, exts: [""] });
  return found ? ok(found) : err("not_found", `${name}: command not found`);
}
