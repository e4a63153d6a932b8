/**
 * Checks a deliverable folder: README.md with the required sections and a manifest whose every
 * listed file exists with the stated size; files present but unlisted are reported too.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { err, ok, type Result } from "../util/result.ts";
import { resolveWithin } from "./resolve-within.ts";

export interface ManifestEntry {
  path: string;
  bytes: number;
}

export interface DeliverableReport {
  dir: string;
  entries: ManifestEntry[];
  totalBytes: number;
}

const REQUIRED_SECTIONS = [/^##\s+Manifest/im, /^##\s+How to verify/im, /^##\s+Limitations/im];

async function listFiles(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(p, base)));
    // A symlink is listed too: unless the manifest names it (and it stays inside), it is reported.
    else if (e.isFile() || e.isSymbolicLink()) out.push(path.relative(base, p));
  }
  return out.sort();
}

/** How strict the check is: a run on a repository delivers a commit, so its folder may hold only the README. */
export interface DeliverableRules {
  allowEmptyManifest?: boolean;
  /** Files the orchestrator writes into the folder (not listed in the manifest). */
  orchestratorFiles?: string[];
}

export async function checkDeliverable(dir: string, rules: DeliverableRules = {}): Promise<Result<DeliverableReport>> {
  let readme: string;
  try {
    readme = await readFile(path.join(dir, "README.md"), "utf8");
  } catch {
    return err("deliverable_invalid", `${dir}/README.md is missing`);
  }
  const missingSections = REQUIRED_SECTIONS.filter((re) => !re.test(readme)).map((re) =>
    re.source.replace(/\^##\\s\+/, "## "),
  );
  if (missingSections.length)
    return err("deliverable_invalid", `README.md lacks the sections: ${missingSections.join(", ")}`);
  const manifestText = readme.split(/^##\s+Manifest.*$/im)[1]?.split(/^##\s/m)[0] ?? "";
  const entries: ManifestEntry[] = [];
  for (const m of manifestText.matchAll(/^\s*[-*]\s+`?([^`(\s][^`(]*?)`?\s*\((\d+)\s*bytes?\)/gim))
    entries.push({ path: m[1]!.trim(), bytes: Number(m[2]) });
  if (entries.length === 0 && !rules.allowEmptyManifest)
    return err("deliverable_invalid", 'README.md\'s manifest lists no files as "- <path> (<size> bytes)"');
  const problems: string[] = [];
  for (const e of entries) {
    const real = await resolveWithin(dir, e.path, "the deliverable");
    if ("error" in real) {
      problems.push(real.error.code === "not_found" ? `${e.path} is listed but missing` : real.error.message);
      continue;
    }
    const s = await stat(real.ok);
    if (s.size !== e.bytes) problems.push(`${e.path} is ${s.size} bytes, the manifest says ${e.bytes}`);
  }
  const listed = new Set(entries.map((e) => path.normalize(e.path)));
  const own = new Set(["README.md", ...(rules.orchestratorFiles ?? [])]);
  for (const f of await listFiles(dir))
    if (!own.has(f) && !listed.has(f)) problems.push(`${f} is in the deliverable but not in the manifest`);
  if (problems.length)
    return err("manifest_mismatch", `the deliverable's manifest does not match its files:\n- ${problems.join("\n- ")}`);
  return ok({ dir, entries, totalBytes: entries.reduce((a, e) => a + e.bytes, 0) });
}
