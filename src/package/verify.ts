/**
 * `relay package verify`: compares relay-package.json with what a package directory or archive
 * actually holds: missing, extra, resized or changed files, executable bits, entrypoints.
 */
import { statSync } from "node:fs";
import path from "node:path";
import { err, ok, type Result } from "../util/result.ts";
import { archiveFormatOf, readArchive } from "./archive.ts";
import {
  describeFiles,
  MANIFEST_NAME,
  type ManifestFile,
  type PackageManifest,
  parseManifest,
  readManifest,
} from "./manifest.ts";

export interface VerifyReport {
  source: string;
  kind: "dir" | "tar.gz" | "tar.zst" | "zip";
  manifest?: PackageManifest;
  files: number;
  problems: string[];
}

function compare(manifest: PackageManifest, actual: ManifestFile[], checkExec: boolean): string[] {
  const problems: string[] = [];
  const want = new Map(manifest.files.map((f) => [f.path, f]));
  const have = new Map(actual.map((f) => [f.path, f]));
  for (const [p, w] of want) {
    const h = have.get(p);
    if (!h) {
      problems.push(`missing: ${p}`);
      continue;
    }
    if (h.size !== w.size) problems.push(`size mismatch: ${p} is ${h.size} bytes, manifest says ${w.size}`);
    else if (h.sha256 !== w.sha256) problems.push(`sha256 mismatch: ${p} is ${h.sha256}, manifest says ${w.sha256}`);
    if (checkExec && h.executable !== w.executable)
      problems.push(
        `mode mismatch: ${p} is ${h.executable ? "" : "not "}executable, manifest says ${w.executable ? "" : "not "}executable`,
      );
  }
  for (const p of have.keys()) if (!want.has(p)) problems.push(`extra file: ${p}`);
  for (const [role, p] of Object.entries(manifest.entrypoints)) {
    const w = want.get(p);
    if (!w) problems.push(`entrypoint ${role} (${p}) is not listed in files`);
    else if (!w.executable) problems.push(`entrypoint ${role} (${p}) is not executable`);
  }
  return problems;
}

export async function verifyPackage(target: string): Promise<Result<VerifyReport>> {
  const abs = path.resolve(target);
  let st;
  try {
    st = statSync(abs);
  } catch {
    return err("not_found", `${target}: no such file or directory`);
  }
  if (st.isDirectory()) {
    const m = readManifest(abs);
    if ("error" in m) return ok({ source: abs, kind: "dir", files: 0, problems: [m.error.message] });
    const files = await describeFiles(abs);
    if ("error" in files)
      return ok({ source: abs, kind: "dir", manifest: m.ok, files: 0, problems: [files.error.message] });
    return ok({
      source: abs,
      kind: "dir",
      manifest: m.ok,
      files: files.ok.length,
      problems: compare(m.ok, files.ok, process.platform !== "win32"),
    });
  }
  const kind = archiveFormatOf(abs);
  if (!kind)
    return err("bad_archive_format", `${target}: not a directory or a .tar.gz, .tgz, .tar.zst or .zip archive`);
  const entries = await readArchive(abs, (name) => name === MANIFEST_NAME);
  if ("error" in entries) return ok({ source: abs, kind, files: 0, problems: [entries.error.message] });
  const problems: string[] = [];
  const mEntry = entries.ok.find((e) => e.path === MANIFEST_NAME && e.type === "file");
  if (!mEntry?.data)
    return ok({ source: abs, kind, files: 0, problems: [`${MANIFEST_NAME} is missing from the archive`] });
  const m = parseManifest(mEntry.data.toString("utf8"), `${MANIFEST_NAME} in ${target}`);
  if ("error" in m) return ok({ source: abs, kind, files: 0, problems: [m.error.message] });
  const seen = new Set<string>();
  for (const e of entries.ok) {
    if (seen.has(e.path)) problems.push(`duplicate entry: ${e.path}`);
    seen.add(e.path);
  }
  const actual = entries.ok
    .filter((e) => e.type === "file" && e.path !== MANIFEST_NAME)
    .map((e) => ({ path: e.path, size: e.size, sha256: e.sha256, executable: (e.mode & 0o100) !== 0 }));
  problems.push(...compare(m.ok, actual, true));
  return ok({ source: abs, kind, manifest: m.ok, files: actual.length, problems });
}
