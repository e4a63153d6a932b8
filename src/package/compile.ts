/**
 * How a relay binary is made, in two steps that every build shares (npm run build, a package
 * build from the source tree, and a compiled binary recompiling itself for another target):
 *   1. bundle src/main.ts into one minified main.js (every asset inlined), plus a gzip of it;
 *   2. `bun build --compile --bytecode main.js relay-bundle.gz`: the binary runs main.js and
 *      carries the gzip as an embedded file, so it can recompile exactly itself later
 *      (self-bundle.ts) without the source tree.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { err, ok, type Result } from "../util/result.ts";
import type { TargetInfo } from "./targets.ts";

/** The embedded file's name before bun adds its content hash (`relay-bundle-<hash>.gz`). */
export const BUNDLE_ASSET = "relay-bundle.gz";
const BUNDLE_MAIN = "main.js";

/** A bun to run: a bun executable, or a compiled relay acting as bun (BUN_BE_BUN=1). */
export interface BunCommand {
  path: string;
  env?: Record<string, string | undefined>;
}

/** A directory holding main.js and relay-bundle.gz. */
export interface Bundle {
  dir: string;
}

export interface CompileOptions {
  bun: BunCommand;
  bundle: Bundle;
  target: TargetInfo;
  /** Omit `--target` (bun compiles for itself). */
  host: boolean;
  /** The target's bun executable, for offline cross builds. */
  compileExecutablePath?: string;
  outfile: string;
}

function run(bun: BunCommand, args: string[], cwd: string): Result<null> {
  const r = spawnSync(bun.path, args, { cwd, env: bun.env ?? process.env, encoding: "utf8", timeout: 600_000, maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) {
    const why = r.error?.message ?? `exit ${r.status}`;
    return err("compile_failed", `${bun.path} ${args.join(" ")} failed (${why}):\n${(r.stderr || r.stdout || "").trim().slice(-4000)}`);
  }
  return ok(null);
}

/** Step 1: src/main.ts of `sourceRoot` as one main.js and its gzip, in a new directory under `workDir`. */
export function bundleSource(bun: BunCommand, sourceRoot: string, workDir: string): Result<Bundle> {
  const dir = mkdtempSync(path.join(workDir, "bundle-"));
  const r = run(bun, ["build", path.join(sourceRoot, "src", "main.ts"), "--target=bun", "--minify", "--outdir", dir], sourceRoot);
  if ("error" in r) return r;
  const extra = readdirSync(dir).filter((f) => f !== BUNDLE_MAIN);
  // An asset beside main.js would be missing from a binary recompiled from the bundle alone.
  if (extra.length > 0) return err("compile_failed", `the bundle has files besides ${BUNDLE_MAIN} (${extra.join(", ")}): import assets as text so they are inlined`);
  if (!existsSync(path.join(dir, BUNDLE_MAIN))) return err("compile_failed", `bun build wrote no ${BUNDLE_MAIN}`);
  return writeBundle(dir, readFileSync(path.join(dir, BUNDLE_MAIN)));
}

/** Writes main.js (when `dir` lacks it) and its gzip into `dir`. */
export function writeBundle(dir: string, main: Uint8Array): Result<Bundle> {
  const mainPath = path.join(dir, BUNDLE_MAIN);
  if (!existsSync(mainPath)) writeFileSync(mainPath, main);
  writeFileSync(path.join(dir, BUNDLE_ASSET), gzipSync(main, { level: 9 }));
  return ok({ dir });
}

/** Step 2: the binary for a target from a bundle. */
export function compileBundle(o: CompileOptions): Result<{ outfile: string; bytes: number; ms: number }> {
  mkdirSync(path.dirname(o.outfile), { recursive: true });
  rmSync(o.outfile, { force: true });
  // The bundle is ESM (it uses import.meta); bytecode for it must be ESM too.
  const args = ["build", "--compile", "--bytecode", "--format=esm", BUNDLE_MAIN, BUNDLE_ASSET, "--outfile", o.outfile];
  if (!o.host) args.push(`--target=${o.target.bunTarget}`);
  if (o.compileExecutablePath) args.push(`--compile-executable-path=${o.compileExecutablePath}`);
  const started = Date.now();
  const r = run(o.bun, args, o.bundle.dir);
  if ("error" in r) return r;
  // bun can exit 0 without writing the output (e.g. a failed download): check the file too.
  if (!existsSync(o.outfile)) return err("compile_failed", `${o.bun.path} ${args.join(" ")} exited 0 but wrote no ${o.outfile}`);
  return ok({ outfile: o.outfile, bytes: statSync(o.outfile).size, ms: Date.now() - started });
}

/** Both steps from a source tree, in a temporary directory removed afterwards. */
export function compileSource(o: Omit<CompileOptions, "bundle"> & { sourceRoot: string }): Result<{ outfile: string; bytes: number; ms: number }> {
  const work = mkdtempSync(path.join(os.tmpdir(), "relay-compile-"));
  try {
    const started = Date.now();
    const bundle = bundleSource(o.bun, o.sourceRoot, work);
    if ("error" in bundle) return bundle;
    const out = compileBundle({ ...o, bundle: bundle.ok });
    return "error" in out ? out : ok({ ...out.ok, ms: Date.now() - started });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
