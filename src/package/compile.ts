/**
 * How a relay binary is made, in two steps that every build shares (npm run build, a package
 * build from the source tree, and a compiled binary recompiling itself for another target):
 *   1. bundle src/main.ts into minified chunks (main.js imports the rest on demand, so each
 *      subcommand parses only its own code), plus relay-bundle.gz holding them all, plus the
 *      wasm files it runs (QuickJS, tree-sitter and its bash grammar: WASM_ASSETS) from
 *      node_modules;
 *   2. `bun build --compile --splitting --bytecode main.js relay-bundle.gz *.wasm`: the binary
 *      runs main.js and carries the gzip and the wasm as embedded files, so it can recompile
 *      exactly itself later (self-bundle.ts) without the source tree.
 */
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { z } from "zod";
import { WASM_ASSETS, type WasmAsset } from "../util/embedded-file.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import type { TargetInfo } from "./targets.ts";

/** The embedded file's name before bun adds its content hash (`relay-bundle-<hash>.gz`). */
export const BUNDLE_ASSET = "relay-bundle.gz";
const BUNDLE_MAIN = "main.js";

/** relay-bundle.gz, once gunzipped: every chunk of the bundle by its file name. */
export const BundleFileSchema = lazySchema(() =>
  z
    .object({
      format: z.literal("relay-bundle/1"),
      files: z.record(z.string().regex(/^[A-Za-z0-9._-]+\.js$/, "a chunk name (no directories)"), z.string()),
    })
    .refine((b) => BUNDLE_MAIN in b.files, `the bundle has no ${BUNDLE_MAIN}`),
);
export type BundleFile = z.infer<typeof BundleFileSchema>;

/** A bun to run: a bun executable, or a compiled relay acting as bun (BUN_BE_BUN=1). */
export interface BunCommand {
  path: string;
  env?: Record<string, string | undefined>;
}

/** A directory holding main.js, the chunks it imports, relay-bundle.gz and the WASM_ASSETS. */
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
  const r = spawnSync(bun.path, args, {
    cwd,
    env: bun.env ?? process.env,
    encoding: "utf8",
    timeout: 600_000,
    maxBuffer: 64 << 20,
  });
  if (r.error || r.status !== 0) {
    const why = r.error?.message ?? `exit ${r.status}`;
    return err(
      "compile_failed",
      `${bun.path} ${args.join(" ")} failed (${why}):\n${(r.stderr || r.stdout || "").trim().slice(-4000)}`,
    );
  }
  return ok(null);
}

/** Step 1: src/main.ts of `sourceRoot` as chunks and their gzip, in a new directory under `workDir`. */
export function bundleSource(bun: BunCommand, sourceRoot: string, workDir: string): Result<Bundle> {
  const dir = mkdtempSync(path.join(workDir, "bundle-"));
  const r = run(
    bun,
    [
      "build",
      path.join(sourceRoot, "src", "main.ts"),
      "--target=bun",
      "--minify",
      "--splitting",
      "--format=esm",
      "--outdir",
      dir,
    ],
    sourceRoot,
  );
  if ("error" in r) return r;
  const names = readdirSync(dir);
  // An asset beside the chunks would be missing from a binary recompiled from the bundle alone.
  const extra = names.filter((f) => !f.endsWith(".js"));
  if (extra.length > 0)
    return err(
      "compile_failed",
      `the bundle has files besides its .js chunks (${extra.join(", ")}): import assets as text so they are inlined`,
    );
  if (!names.includes(BUNDLE_MAIN)) return err("compile_failed", `bun build wrote no ${BUNDLE_MAIN}`);
  const files = Object.fromEntries(names.map((n) => [n, readFileSync(path.join(dir, n), "utf8")]));
  writeFileSync(
    path.join(dir, BUNDLE_ASSET),
    gzipSync(JSON.stringify({ format: "relay-bundle/1", files } satisfies BundleFile), { level: 9 }),
  );
  for (const asset of WASM_ASSETS) {
    const wasm = wasmAssetPath(sourceRoot, asset);
    if ("error" in wasm) return wasm;
    copyFileSync(wasm.ok, path.join(dir, asset.asset));
  }
  return ok({ dir });
}

/**
 * A wasm asset's file in `sourceRoot`'s node_modules (a direct dependency, so at the top), by its
 * path in the package or the package's export: a compiled relay's require.resolve does not
 * search a source tree.
 */
export function wasmAssetPath(sourceRoot: string, asset: WasmAsset): Result<string> {
  const dir = path.join(sourceRoot, "node_modules", asset.package);
  let file: string | undefined;
  if ("path" in asset.file) file = path.join(dir, asset.file.path);
  else {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
        exports?: Record<string, unknown>;
      };
      const rel = manifest.exports?.[asset.file.export];
      if (typeof rel === "string") file = path.join(dir, rel);
    } catch {
      file = undefined;
    }
  }
  if (file && existsSync(file)) return ok(file);
  const where = "path" in asset.file ? asset.file.path : `its ${asset.file.export} export`;
  return err(
    "compile_failed",
    `${asset.asset} (${asset.package}, ${where}) is not installed in ${sourceRoot}: run npm ci there`,
  );
}

/** A directory under `workDir` holding the bundle's chunks, its gzip (`gzip`, as embedded) and the wasm files by asset name. */
export function unpackBundle(
  workDir: string,
  bundle: BundleFile,
  gzip: Uint8Array,
  wasm: ReadonlyMap<string, Uint8Array>,
): Result<Bundle> {
  const dir = mkdtempSync(path.join(workDir, "self-"));
  for (const [name, text] of Object.entries(bundle.files)) writeFileSync(path.join(dir, name), text);
  writeFileSync(path.join(dir, BUNDLE_ASSET), gzip);
  for (const [asset, bytes] of wasm) writeFileSync(path.join(dir, asset), bytes);
  return ok({ dir });
}

/** Step 2: the binary for a target from a bundle. */
export function compileBundle(o: CompileOptions): Result<{ outfile: string; bytes: number; ms: number }> {
  mkdirSync(path.dirname(o.outfile), { recursive: true });
  rmSync(o.outfile, { force: true });
  // The bundle is ESM (it uses import.meta); bytecode for it must be ESM too. --splitting keeps
  // the chunks apart inside the binary, so a subcommand loads only what it imports.
  const args = [
    "build",
    "--compile",
    "--splitting",
    "--bytecode",
    "--format=esm",
    BUNDLE_MAIN,
    BUNDLE_ASSET,
    ...WASM_ASSETS.map((a) => a.asset),
    "--outfile",
    o.outfile,
  ];
  if (!o.host) args.push(`--target=${o.target.bunTarget}`);
  if (o.compileExecutablePath) args.push(`--compile-executable-path=${o.compileExecutablePath}`);
  const started = Date.now();
  const r = run(o.bun, args, o.bundle.dir);
  if ("error" in r) return r;
  // bun can exit 0 without writing the output (e.g. a failed download): check the file too.
  if (!existsSync(o.outfile))
    return err("compile_failed", `${o.bun.path} ${args.join(" ")} exited 0 but wrote no ${o.outfile}`);
  return ok({ outfile: o.outfile, bytes: statSync(o.outfile).size, ms: Date.now() - started });
}

/** Both steps from a source tree, in a temporary directory removed afterwards. */
export function compileSource(
  o: Omit<CompileOptions, "bundle"> & { sourceRoot: string },
): Result<{ outfile: string; bytes: number; ms: number }> {
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
