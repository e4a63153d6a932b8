/**
 * Read-only browsing of a run's artifacts/, memory/, index/ and deliverable/. A path from a URL
 * is taken apart into its decoded segments, each checked (no empty, '.', '..', separators or
 * NUL, so no `..`, `%2e%2e`, `%2f` or absolute path gets through), and then resolved through
 * every symlink with the run store's own check (resolveWithin): it must stay inside its folder.
 */
import { lstat, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { byCodeUnits } from "../../util/compare.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { resolveWithin } from "../resolve-within.ts";
import { RUN_DIRS } from "../run-format.ts";
import type { FileEntry, FileList } from "./api-schemas.ts";

/** Entries a listing holds at most (a run with more is cut, and says so). */
export const MAX_LISTED = 5000;

const IMAGE_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};

/** What a file is served as: a raster image type, else plain text (never HTML, never SVG). */
export function servedType(file: string): string {
  return IMAGE_TYPES[path.extname(file).toLowerCase()] ?? "text/plain; charset=utf-8";
}

/** The segments of `raw` (the URL path after /files/, still encoded), checked; the first names a run folder. */
export function fileSegments(raw: string): Result<string[]> {
  const bad = (why: string) =>
    err(
      "bad_path",
      `${JSON.stringify(raw)} is not a path inside the run's ${RUN_DIRS.join(", ")} folders (${why}); use a path such as artifacts/notes.md`,
    );
  const parts = raw.split("/");
  if (parts.at(-1) === "") parts.pop();
  const out: string[] = [];
  for (const p of parts) {
    let d: string;
    try {
      d = decodeURIComponent(p);
    } catch {
      return bad("a broken %-escape");
    }
    if (d === "" || d === "." || d === "..") return bad(`the segment ${JSON.stringify(d)}`);
    if (/[/\\\0]/.test(d)) return bad("a separator or NUL inside a segment");
    out.push(d);
  }
  if (out.length === 0 || !(RUN_DIRS as readonly string[]).includes(out[0]!))
    return bad(`it must start with one of ${RUN_DIRS.join(", ")}`);
  return ok(out);
}

export type Resolved = { kind: "file"; real: string; size: number; type: string } | { kind: "dir"; real: string };

/** The real file or folder `segments` name in the run at `runDir`, if it stays inside its folder. */
export async function resolveRunFile(runDir: string, segments: string[]): Promise<Result<Resolved>> {
  const [top, ...rest] = segments;
  const real = await resolveWithin(
    path.join(runDir, top!),
    rest.length ? path.join(...rest) : ".",
    `the run's ${top}/ folder`,
  );
  if ("error" in real) return real;
  const s = await stat(real.ok);
  if (s.isDirectory()) return ok({ kind: "dir", real: real.ok });
  if (!s.isFile()) return err("not_a_file", `${segments.join("/")} is neither a file nor a folder`);
  return ok({ kind: "file", real: real.ok, size: s.size, type: servedType(real.ok) });
}

/** Every file and folder under `dir` (shown as `prefix/...`); symlinks are listed only if they stay inside `within`. */
export async function listFiles(dir: string, prefix: string, within: string, out: FileEntry[] = []): Promise<FileList> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => byCodeUnits(a.name, b.name));
  for (const e of entries) {
    if (out.length >= MAX_LISTED) return { files: out, truncated: true };
    const abs = path.join(dir, e.name);
    const rel = `${prefix}/${e.name}`;
    let s = await lstat(abs).catch(() => undefined);
    if (s?.isSymbolicLink()) {
      const r = await resolveWithin(within, path.relative(within, abs), "the folder");
      s = "ok" in r ? await stat(r.ok).catch(() => undefined) : undefined;
      if (s?.isDirectory()) s = undefined; // a linked folder is not walked: no loops
    }
    if (!s) continue;
    if (s.isDirectory()) {
      out.push({ path: rel, size: 0, kind: "dir" });
      const sub = await listFiles(abs, rel, within, out);
      if (sub.truncated) return sub;
    } else if (s.isFile()) out.push({ path: rel, size: s.size, kind: "file" });
  }
  return { files: out, truncated: false };
}

/** The files of the run's four folders. */
export async function listRunFiles(runDir: string): Promise<FileList> {
  const out: FileEntry[] = [];
  for (const d of RUN_DIRS) {
    out.push({ path: d, size: 0, kind: "dir" });
    const r = await listFiles(path.join(runDir, d), d, path.join(runDir, d), out);
    if (r.truncated) return r;
  }
  return { files: out, truncated: false };
}
