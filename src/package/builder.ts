/**
 * Builds a Relay package directory for a target, then its archives:
 *   relay-package.json, bin/<relay|relay-executor>[.exe], bin/relay-code-mode-host[.exe],
 *   relay-path/rg[.exe] (with --rg-bin).
 * Prebuilt binaries are authoritative (copied, never rebuilt) but must exist, be executable and
 * match the target's format and CPU. Otherwise relay is compiled (compile.ts): from the source tree
 * with bun, or, in a downloaded binary, from its own embedded bundle with itself as bun (a host
 * package is then the running binary, copied). Cross targets use --compile-executable-path or the
 * cached @oven/bun-<target> runtime of the compiling bun's version (bun-cache.ts).
 */
import { accessSync, chmodSync, constants, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { currentRuntime } from "../util/runtime.ts";
import { relayHome } from "../home/home.ts";
import { err, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import { writeArchive, type ArchiveFormat } from "./archive.ts";
import { checkBinaryForTarget } from "./binary-header.ts";
import { ensureTargetBun, type BunFetcher } from "./bun-cache.ts";
import { bundleSource, compileBundle, type Bundle, type BunCommand } from "./compile.ts";
import { selfAsBun, selfBundle } from "./self-bundle.ts";
import { describeFiles, MANIFEST_NAME, PATH_DIR, serializeManifest, type PackageManifest, type Variant } from "./manifest.ts";
import { hostTarget, parseTarget, type TargetInfo } from "./targets.ts";
import { bunVersion, findBun, findSourceTree, type SourceTree } from "./toolchain.ts";

type Env = Record<string, string | undefined>;

export interface BuildPackageOptions {
  target?: string;
  variant?: Variant;
  packageDir?: string;
  archives?: ArchiveFormat[];
  /** Where archives go (default: beside the package directory). */
  archiveDir?: string;
  entrypointBin?: string;
  codeModeHostBin?: string;
  rgBin?: string;
  compileExecutablePath?: string;
  /** Replace a non-empty package directory. */
  force?: boolean;
  env?: Env;
  cwd?: string;
  fetcher?: BunFetcher;
  log?: (line: string) => void;
}

export interface BuiltArchive {
  format: ArchiveFormat;
  path: string;
  bytes: number;
  ms: number;
}

export interface BuildPackageResult {
  packageDir: string;
  manifest: PackageManifest;
  archives: BuiltArchive[];
  /** What was compiled (absent when every binary was prebuilt). */
  compiled?: { bun: string; bunVersion: string; from: string; compileExecutablePath?: string; fetched?: boolean; ms: number; bytes: number };
  notes: string[];
}

/** Error codes that mean "the request was wrong" (exit 2) rather than "the work failed" (exit 1). */
export const USAGE_ERROR_CODES = new Set(["bad_target", "bad_variant", "bad_archive_format", "bad_override", "wrong_arch", "bad_binary", "package_dir_not_empty", "bad_archive_path"]);

function checkOverride(flag: string, file: string, target: TargetInfo): Result<string> {
  const abs = path.resolve(file);
  if (!existsSync(abs)) return err("bad_override", `${flag} ${file}: no such file`);
  if (!statSync(abs).isFile()) return err("bad_override", `${flag} ${file}: not a regular file`);
  if (process.platform !== "win32" && target.os !== "windows") {
    try {
      accessSync(abs, constants.X_OK);
    } catch {
      return err("bad_override", `${flag} ${file}: not executable (chmod +x it)`);
    }
  }
  const h = checkBinaryForTarget(abs, target);
  if ("error" in h) return err(h.error.code, `${flag}: ${h.error.message}`);
  return ok(abs);
}

/** `replace`: --force, or the default directory (build output under dist/). */
function preparePackageDir(dir: string, replace: boolean): Result<null> {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) return err("package_dir_not_empty", `${dir} exists and is not a directory`);
    if (readdirSync(dir).length > 0) {
      if (!replace) return err("package_dir_not_empty", `${dir} is not empty (pass --force to replace it)`);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  mkdirSync(path.join(dir, "bin"), { recursive: true });
  mkdirSync(path.join(dir, PATH_DIR), { recursive: true });
  return ok(null);
}

function place(src: string, dest: string, executable: boolean): void {
  copyFileSync(src, dest);
  chmodSync(dest, executable ? 0o755 : 0o644);
}

/**
 * bin/relay-code-mode-host is the entrypoint under a second name: a hard link (one copy on disk
 * and in tar archives; zip stores it twice), or a copy where the filesystem cannot link.
 */
function linkOrCopy(src: string, dest: string): "link" | "copy" {
  try {
    linkSync(src, dest);
    return "link";
  } catch {
    place(src, dest, true);
    return "copy";
  }
}

export async function buildPackage(o: BuildPackageOptions = {}): Promise<Result<BuildPackageResult>> {
  try {
    return await build(o);
  } catch (e) {
    // Filesystem surprises (permissions, a full disk) end as a value like every other failure.
    return err("build_failed", `package build failed: ${(e as Error).message}`);
  }
}

/** What compiles: a bun and the bundle it compiles, from the source tree or from this binary itself. */
interface Toolchain {
  bun: BunCommand;
  bunVersion: string;
  /** What is compiled, for messages. */
  from: string;
  bundle(workDir: string): Promise<Result<Bundle>>;
}

function findToolchain(source: Result<SourceTree>, env: Env): Result<Toolchain> {
  if ("ok" in source) {
    const bun = findBun(source.ok.root, env);
    if ("error" in bun) return bun;
    const bv = bunVersion(bun.ok);
    if ("error" in bv) return bv;
    const cmd: BunCommand = { path: bun.ok };
    return ok({ bun: cmd, bunVersion: bv.ok, from: source.ok.main, bundle: async (work) => bundleSource(cmd, source.ok.root, work) });
  }
  // A downloaded binary recompiles its own embedded bundle, acting as bun itself.
  if (currentRuntime() === "bun-compiled" && process.versions.bun) {
    return ok({ bun: selfAsBun(env), bunVersion: process.versions.bun, from: `this binary's own bundle (${process.execPath})`, bundle: selfBundle });
  }
  return source;
}

async function compileWith(plan: Toolchain & { exePath?: string }, t: TargetInfo, host: boolean, outfile: string): Promise<Result<{ outfile: string; bytes: number; ms: number }>> {
  const work = mkdtempSync(path.join(os.tmpdir(), "relay-compile-"));
  try {
    const started = Date.now();
    const bundle = await plan.bundle(work);
    if ("error" in bundle) return bundle;
    const out = compileBundle({ bun: plan.bun, bundle: bundle.ok, target: t, host, outfile, ...(plan.exePath ? { compileExecutablePath: plan.exePath } : {}) });
    return "error" in out ? out : ok({ ...out.ok, ms: Date.now() - started });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function build(o: BuildPackageOptions): Promise<Result<BuildPackageResult>> {
  const env = o.env ?? process.env;
  const cwd = o.cwd ?? process.cwd();
  const log = o.log ?? (() => {});
  const notes: string[] = [];
  const note = (s: string) => {
    notes.push(s);
    log(s);
  };

  const host = hostTarget();
  const target = o.target ? parseTarget(o.target) : host;
  if ("error" in target) return target;
  const t = target.ok;
  const variant: Variant = o.variant ?? "relay";
  const isHost = "ok" in host && host.ok.name === t.name;

  // Prebuilt inputs first: they are cheap to check and authoritative.
  const pre: { entry?: string; host?: string; rg?: string; exe?: string } = {};
  for (const [flag, file, key] of [
    ["--entrypoint-bin", o.entrypointBin, "entry"],
    ["--code-mode-host-bin", o.codeModeHostBin, "host"],
    ["--rg-bin", o.rgBin, "rg"],
    ["--compile-executable-path", o.compileExecutablePath, "exe"],
  ] as const) {
    if (!file) continue;
    const c = checkOverride(flag, file, t);
    if ("error" in c) return c;
    pre[key] = c.ok;
  }

  const packageDir = path.resolve(cwd, o.packageDir ?? path.join("dist", "package", `${variant}-${t.name}`));
  const source = findSourceTree(env, cwd);
  // A downloaded binary packages itself for its own target: there is nothing to compile from.
  if (!pre.entry && isHost && "error" in source && currentRuntime() === "bun-compiled") {
    const self = checkOverride("the running relay binary", process.execPath, t);
    if ("error" in self) return self;
    pre.entry = self.ok;
    note(`no source tree: packaged the running binary itself (${process.execPath})`);
  }
  const version = "ok" in source ? source.ok.version : VERSION;

  const entryRel = `bin/${variant}${t.exe}`;
  const hostRel = `bin/relay-code-mode-host${t.exe}`;
  let compiled: BuildPackageResult["compiled"];
  const entrySrc = pre.entry;

  // Resolve the toolchain before touching the package directory.
  let plan: (Toolchain & { exePath?: string; fetched?: boolean }) | undefined;
  if (!pre.entry) {
    const tc = findToolchain(source, env);
    if ("error" in tc) return tc;
    plan = tc.ok;
    if (pre.exe) plan.exePath = pre.exe;
    else if (!isHost) {
      const cached = await ensureTargetBun({ home: relayHome(env), version: plan.bunVersion, target: t, env, log, ...(o.fetcher ? { fetcher: o.fetcher } : {}) });
      if ("error" in cached) return cached;
      for (const n of cached.ok.notes) note(n);
      if (cached.ok.fetched) note(`fetched ${t.ovenPackage}@${plan.bunVersion} into ${path.dirname(cached.ok.path)}`);
      plan.exePath = cached.ok.path;
      plan.fetched = cached.ok.fetched;
    }
  }

  const prepared = preparePackageDir(packageDir, (o.force ?? false) || o.packageDir === undefined);
  if ("error" in prepared) return prepared;

  if (plan) {
    log(`compiling ${plan.from} for ${t.name} with bun ${plan.bunVersion}`);
    const out = await compileWith(plan, t, isHost && !plan.exePath, path.join(packageDir, ...entryRel.split("/")));
    if ("error" in out) return out;
    const check = checkBinaryForTarget(out.ok.outfile, t);
    if ("error" in check) return err("compile_failed", `bun produced the wrong binary: ${check.error.message}`);
    chmodSync(out.ok.outfile, 0o755);
    compiled = {
      bun: plan.bun.path,
      bunVersion: plan.bunVersion,
      from: plan.from,
      ms: out.ok.ms,
      bytes: out.ok.bytes,
      ...(plan.exePath ? { compileExecutablePath: plan.exePath } : {}),
      ...(plan.fetched !== undefined ? { fetched: plan.fetched } : {}),
    };
  } else {
    place(entrySrc!, path.join(packageDir, ...entryRel.split("/")), true);
  }
  const hostDest = path.join(packageDir, ...hostRel.split("/"));
  if (pre.host) place(pre.host, hostDest, true);
  else if (linkOrCopy(path.join(packageDir, ...entryRel.split("/")), hostDest) === "copy") note(`${hostRel} is a copy of ${entryRel} (hard links are not supported here)`);
  if (pre.rg) place(pre.rg, path.join(packageDir, PATH_DIR, `rg${t.exe}`), true);

  const files = await describeFiles(packageDir);
  if ("error" in files) return files;
  const manifest: PackageManifest = {
    layoutVersion: 1,
    name: "relay",
    variant,
    version,
    target: t.name,
    ...(compiled ? { bunVersion: compiled.bunVersion } : {}),
    entrypoints: { main: entryRel, codeModeHost: hostRel },
    pathDir: PATH_DIR,
    files: files.ok,
  };
  const manifestPath = path.join(packageDir, MANIFEST_NAME);
  writeFileSync(manifestPath, serializeManifest(manifest));
  chmodSync(manifestPath, 0o644);

  const archives: BuiltArchive[] = [];
  const archiveDir = path.resolve(cwd, o.archiveDir ?? path.dirname(packageDir));
  for (const format of o.archives ?? []) {
    const started = Date.now();
    const a = await writeArchive(packageDir, path.join(archiveDir, `${variant}-${version}-${t.name}.${format}`), format);
    if ("error" in a) return a;
    archives.push({ format, path: a.ok.path, bytes: a.ok.bytes, ms: Date.now() - started });
    log(`wrote ${a.ok.path} (${a.ok.bytes} bytes)`);
  }
  return ok({ packageDir, manifest, archives, ...(compiled ? { compiled } : {}), notes });
}
