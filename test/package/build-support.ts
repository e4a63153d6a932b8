/** What the package build tests share: `relay package` run from source with a clean environment, and its --json report. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type PackageManifest, walkTree } from "../../src/package/manifest.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const hasBun = Boolean(process.versions.bun);

/** Newest mtime (ms) under src/ and of package.json: other people may edit the tree during a run. */
export function newestSourceMtime(): number {
  const t = walkTree(path.join(ROOT, "src"));
  if ("error" in t) return Number.POSITIVE_INFINITY;
  return Math.max(statSync(path.join(ROOT, "package.json")).mtimeMs, ...t.ok.map((e) => statSync(e.abs).mtimeMs));
}

export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.RELAY_SELF_COMMAND;
  delete env.RELAY_SOURCE_DIR;
  delete env.RELAY_BUN_PATH;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** `relay package ...` from source, under the bun running the tests. */
export function relay(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT) {
  return spawnSync(process.execPath, [path.join(ROOT, "src/main.ts"), "package", ...args], {
    cwd,
    env,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
}

export interface BuildJson {
  ok: boolean;
  packageDir: string;
  manifest: PackageManifest;
  archives: { format: string; path: string; bytes: number; ms: number }[];
  compiled: { bunVersion: string; ms: number; bytes: number; fetched?: boolean; compileExecutablePath?: string } | null;
  notes: string[];
}

export function parseBuild(r: ReturnType<typeof relay>): BuildJson {
  assert.equal(r.status, 0, `exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as BuildJson;
}
