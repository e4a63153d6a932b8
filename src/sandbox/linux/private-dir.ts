/** This user's private directory for the sandbox's files: `$TMPDIR/relay-cc-<uid>`. */
import { lstatSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * The directory, made mode 0700 if missing; undefined unless it is a directory (not a link)
 * owned by this user that no one else may enter, so no other user can plant or swap a file in it.
 */
export function privateDir(tmp: string = os.tmpdir()): string | undefined {
  const uid = process.getuid?.() ?? 0;
  const dir = path.join(tmp, `relay-cc-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  const st = lstatSync(dir);
  return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0 ? dir : undefined;
}

/**
 * Writes `name` in the private directory `dir` whole (a temporary file renamed over it), mode
 * 0600; throws as the write does.
 */
export function writePrivateFile(dir: string, name: string, text: string): void {
  const file = path.join(dir, name);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}
