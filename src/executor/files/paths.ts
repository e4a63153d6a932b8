/** Path resolution, stat and the write check shared by the file tools and apply_patch. */
import type { Stats } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { ToolErrorCode } from "../../contracts/executor.ts";
import { PROTECTED_NAMES } from "../../contracts/protected-names.ts";
import type { SandboxPolicy } from "../../contracts/sandbox-policy.ts";
import { isInside } from "../../util/paths.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";

/** A tool path argument: absolute, or relative to the tool's cwd. */
export function resolveToolPath(cwd: string, p: string): string {
  return path.resolve(cwd, p);
}

/**
 * Resolves symlinks of the deepest existing ancestor and appends the part that does not exist
 * yet, so `root/link-to-etc/new-file` resolves to `/etc/new-file`.
 */
export async function realPathOfPossiblyMissing(absPath: string): Promise<string> {
  let current = path.resolve(absPath);
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await fs.realpath(current);
      return rest.length === 0 ? real : path.join(real, ...rest);
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.resolve(absPath);
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
}

/** Whether the sandbox lets the tools write `absPath`; the value is the symlink-free path. */
export async function checkWritable(absPath: string, sandbox: SandboxPolicy): Promise<Result<string, ToolErrorCode>> {
  try {
    if (sandbox.mode === "danger-full-access") return ok(path.resolve(absPath));
    if (sandbox.mode === "read-only") {
      return err(
        "sandbox_denied",
        `Cannot write ${absPath}: the sandbox is read-only, so no file may be created, changed or deleted. Ask the user for write access instead of retrying.`,
      );
    }
    const real = await realPathOfPossiblyMissing(absPath);
    const roots = await Promise.all(sandbox.writable_roots.map((r) => realPathOfPossiblyMissing(r)));
    const containing = roots.filter((root) => isInside(real, root));
    // As the sandbox does for commands: `.git`, `.relay`, `.checkpoints.git` right inside a root stay read-only.
    const guarded = containing.find((root) => PROTECTED_NAMES.includes(path.relative(root, real).split(path.sep)[0]!));
    if (guarded) {
      const name = path.relative(guarded, real).split(path.sep)[0]!;
      return err(
        "sandbox_denied",
        `Cannot write ${absPath}: ${path.join(guarded, name)} stays read-only inside the writable root ${guarded} (the sandbox protects ${PROTECTED_NAMES.join(", ")}). Change files outside it.`,
      );
    }
    const own = await Promise.all((sandbox.read_only_paths ?? []).map((r) => realPathOfPossiblyMissing(r)));
    const kept = own.find((p) => isInside(real, p));
    if (kept)
      return err(
        "sandbox_denied",
        `Cannot write ${absPath}: ${kept} is read-only in this sandbox (it is not yours to change).`,
      );
    if (containing.length > 0) return ok(real);
    const shown = real === path.resolve(absPath) ? absPath : `${absPath} (which resolves to ${real})`;
    const allowed = sandbox.writable_roots.length > 0 ? sandbox.writable_roots.join(", ") : "(none)";
    return err(
      "sandbox_denied",
      `Cannot write ${shown}: the workspace-write sandbox only allows writes inside its writable roots: ${allowed}. Write inside one of those directories instead.`,
    );
  } catch (e) {
    return err("io_error", `Could not check whether ${absPath} is writable: ${errorMessage(e)}`);
  }
}

/** Node-style error code of a thrown fs error, if any. */
export function fsErrorCode(e: unknown): string | undefined {
  if (typeof e === "object" && e !== null && "code" in e && typeof e.code === "string") return e.code;
  return undefined;
}

/** Turns a failed stat/open into an error value the model can act on. */
export function fsError(e: unknown, absPath: string, cwd: string): Result<never, ToolErrorCode> {
  const code = fsErrorCode(e);
  if (code === "ENOENT" || code === "ENOTDIR") {
    return err(
      "not_found",
      `${absPath} does not exist. Check the path (relative paths resolve against ${cwd}); list_dir or grep_files can help find it.`,
    );
  }
  if (code === "EACCES" || code === "EPERM") return err("permission_denied", `Permission denied: ${absPath}`);
  return err("io_error", `Could not access ${absPath}: ${errorMessage(e)}`);
}

/** `fs.stat`, with a failure turned into the error value of `fsError`. */
export async function statPath(absPath: string, cwd: string): Promise<Result<Stats, ToolErrorCode>> {
  try {
    return ok(await fs.stat(absPath));
  } catch (e) {
    return fsError(e, absPath, cwd);
  }
}

/** A relative path with `/` between its parts on every platform (as globs and .gitignore want). */
export function toPosix(p: string): string {
  return path.sep === "/" ? p : p.split(path.sep).join("/");
}
