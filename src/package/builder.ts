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
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { relayHome } from "../home/home.ts";
import { err, ok, type Result } from "../util/result.ts";
import { currentRuntime } from "../util/runtime.ts";
import { VERSION } from "../version.ts";
import { type ArchiveFormat, writeArchive } from "./archive.ts";
import { checkBinaryForTarget } from "./binary-header.ts";
import { type BunFetcher, ensureTargetBun } from "./bun-cache.ts";
import { type BunCommand, type Bundle, bundleSource, compileBundle } from "./compile.ts";
import {
  describeFiles,
  MANIFEST_NAME,
  PATH_DIR,
  type PackageManifest,
  serializeManifest,
  type Variant,
} from "./manifest.ts";
import { selfAsBun, selfBundle } from "./self-bundle.ts";
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
  compiled?: {
    bun: string;
    bunVersion: string;
    from: string;
    compileExecutablePath?: string;
    fetched?: boolean;
    ms: number;
    bytes: number;
  };
  notes: string[];
}

/** Error codes that mean "the request was wrong" (exit 2) rather than "the work failed" (exit 1). */
export const USAGE_ERROR_CODES = new Set([
  "bad_target",
  "bad_variant",
  "bad_archive_format",
  "bad_override",
  "wrong_arch",
  "bad_binary",
  "package_dir_not_empty",
  "bad_archive_path",
]);

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
    return ok({
      bun: cmd,
      bunVersion: bv.ok,
      from: source.ok.main,
      bundle: async (work) => bundleSource(cmd, source.ok.root, work),
    });
  }
  // A downloaded binary recompiles its own embedded bundle, acting as bun itself.
  if (currentRuntime() === "bun-compiled" && process.versions.bun) {
    return ok({
      bun: selfAsBun(env),
      bunVersion: process.versions.bun,
      from: `this binary's own bundle (${process.execPath})`,
      bundle: selfBundle,
    });
  }
  return source;
}

async function compileWith(
  plan: Toolchain & { exePath?: string },
  t: TargetInfo,
  host: boolean,
  outfile: string,
): Promise<Result<{ outfile: string; bytes: number; ms: number }>> {
  const work = mkdtempSync(path.join(os.tmpdir(), "relay-compile-"));
  try {
    const started = Date.now();
    const bundle = await plan.bundle(work);
    if ("error" in bundle) return bundle;
    const out = compileBundle({
      bun: plan.bun,
      bundle: bundle.ok,
      target: t,
      host,
      outfile,
      ...(plan.exePath ? { compileExecutablePath: plan.exePath } : {}),
    });
    return "error" in out ? out : ok({ ...out.ok, ms: Date.now() - started });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** What one build settled before any work: where, for what, and how it reports. */
interface BuildContext {
  env: Env;
  cwd: string;
  log: (line: string) => void;
  /** Logs a line and keeps it for the result's notes. */
  note: (line: string) => void;
  notes: string[];
  target: TargetInfo;
  variant: Variant;
  /** The target is the machine this runs on. */
  isHost: boolean;
}

/** The prebuilt binaries given on the command line, checked (absolute paths). */
interface Prebuilt {
  entry?: string;
  host?: string;
  rg?: string;
  exe?: string;
}

/** A toolchain resolved for this target: with the bun runtime to compile against, when it is not the host's. */
type CompilePlan = Toolchain & { exePath?: string; fetched?: boolean };

async function build(o: BuildPackageOptions): Promise<Result<BuildPackageResult>> {
  const ctx = buildContext(o);
  if ("error" in ctx) return ctx;
  const { target: t, variant } = ctx.ok;
  // Prebuilt inputs first: they are cheap to check and authoritative.
  const pre = checkPrebuilt(o, t);
  if ("error" in pre) return pre;
  const packageDir = path.resolve(ctx.ok.cwd, o.packageDir ?? path.join("dist", "package", `${variant}-${t.name}`));
  const source = findSourceTree(ctx.ok.env, ctx.ok.cwd);
  const self = packageSelfWithoutSource(pre.ok, source, ctx.ok);
  if ("error" in self) return self;
  const version = "ok" in source ? source.ok.version : VERSION;

  // Resolve the toolchain before touching the package directory.
  const plan = pre.ok.entry ? ok(undefined) : await planCompile(source, pre.ok.exe, o.fetcher, ctx.ok);
  if ("error" in plan) return plan;
  const prepared = preparePackageDir(packageDir, (o.force ?? false) || o.packageDir === undefined);
  if ("error" in prepared) return prepared;

  const layout = { entryRel: `bin/${variant}${t.exe}`, hostRel: `bin/relay-code-mode-host${t.exe}` };
  const compiled = await placeEntrypoint(
    plan.ok,
    pre.ok.entry,
    path.join(packageDir, ...layout.entryRel.split("/")),
    ctx.ok,
  );
  if ("error" in compiled) return compiled;
  placeCompanions(pre.ok, packageDir, layout, ctx.ok);
  const manifest = await writeManifest(packageDir, layout, version, compiled.ok, ctx.ok);
  if ("error" in manifest) return manifest;
  const archives = await writeArchives(
    packageDir,
    path.resolve(ctx.ok.cwd, o.archiveDir ?? path.dirname(packageDir)),
    o.archives ?? [],
    version,
    ctx.ok,
  );
  if ("error" in archives) return archives;
  return ok({
    packageDir,
    manifest: manifest.ok,
    archives: archives.ok,
    ...(compiled.ok ? { compiled: compiled.ok } : {}),
    notes: ctx.ok.notes,
  });
}

function buildContext(o: BuildPackageOptions): Result<BuildContext> {
  const log = o.log ?? (() => {});
  const notes: string[] = [];
  const note = (s: string) => {
    notes.push(s);
    log(s);
  };
  const host = hostTarget();
  const target = o.target ? parseTarget(o.target) : host;
  if ("error" in target) return target;
  const isHost = "ok" in host && host.ok.name === target.ok.name;
  return ok({
    env: o.env ?? process.env,
    cwd: o.cwd ?? process.cwd(),
    log,
    note,
    notes,
    target: target.ok,
    variant: o.variant ?? "relay",
    isHost,
  });
}

function checkPrebuilt(o: BuildPackageOptions, t: TargetInfo): Result<Prebuilt> {
  const pre: Prebuilt = {};
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
  return ok(pre);
}

/** A downloaded binary packages itself for its own target: there is nothing to compile from (sets `pre.entry`). */
function packageSelfWithoutSource(pre: Prebuilt, source: Result<SourceTree>, ctx: BuildContext): Result<null> {
  if (pre.entry || !ctx.isHost || !("error" in source) || currentRuntime() !== "bun-compiled") return ok(null);
  const self = checkOverride("the running relay binary", process.execPath, ctx.target);
  if ("error" in self) return self;
  pre.entry = self.ok;
  ctx.note(`no source tree: packaged the running binary itself (${process.execPath})`);
  return ok(null);
}

/** The toolchain, and for a cross target the bun runtime to compile against (given, or cached and maybe fetched). */
async function planCompile(
  source: Result<SourceTree>,
  exePath: string | undefined,
  fetcher: BunFetcher | undefined,
  ctx: BuildContext,
): Promise<Result<CompilePlan>> {
  const tc = findToolchain(source, ctx.env);
  if ("error" in tc) return tc;
  const plan: CompilePlan = tc.ok;
  if (exePath) plan.exePath = exePath;
  else if (!ctx.isHost) {
    const t = ctx.target;
    const cached = await ensureTargetBun({
      home: relayHome(ctx.env),
      version: plan.bunVersion,
      target: t,
      env: ctx.env,
      log: ctx.log,
      ...(fetcher ? { fetcher } : {}),
    });
    if ("error" in cached) return cached;
    for (const n of cached.ok.notes) ctx.note(n);
    if (cached.ok.fetched) ctx.note(`fetched ${t.ovenPackage}@${plan.bunVersion} into ${path.dirname(cached.ok.path)}`);
    plan.exePath = cached.ok.path;
    plan.fetched = cached.ok.fetched;
  }
  return ok(plan);
}

/** Compiles the entrypoint to `dest` with `plan`, or copies the prebuilt one; what was compiled, if anything. */
async function placeEntrypoint(
  plan: CompilePlan | undefined,
  prebuilt: string | undefined,
  dest: string,
  ctx: BuildContext,
): Promise<Result<BuildPackageResult["compiled"]>> {
  if (!plan) {
    place(prebuilt!, dest, true);
    return ok(undefined);
  }
  const t = ctx.target;
  ctx.log(`compiling ${plan.from} for ${t.name} with bun ${plan.bunVersion}`);
  const out = await compileWith(plan, t, ctx.isHost && !plan.exePath, dest);
  if ("error" in out) return out;
  const check = checkBinaryForTarget(out.ok.outfile, t);
  if ("error" in check) return err("compile_failed", `bun produced the wrong binary: ${check.error.message}`);
  chmodSync(out.ok.outfile, 0o755);
  return ok({
    bun: plan.bun.path,
    bunVersion: plan.bunVersion,
    from: plan.from,
    ms: out.ok.ms,
    bytes: out.ok.bytes,
    ...(plan.exePath ? { compileExecutablePath: plan.exePath } : {}),
    ...(plan.fetched !== undefined ? { fetched: plan.fetched } : {}),
  });
}

interface Layout {
  entryRel: string;
  hostRel: string;
}

/** bin/relay-code-mode-host (prebuilt, else the entrypoint again) and relay-path/rg (with --rg-bin). */
function placeCompanions(pre: Prebuilt, packageDir: string, layout: Layout, ctx: BuildContext): void {
  const hostDest = path.join(packageDir, ...layout.hostRel.split("/"));
  if (pre.host) place(pre.host, hostDest, true);
  else if (linkOrCopy(path.join(packageDir, ...layout.entryRel.split("/")), hostDest) === "copy")
    ctx.note(`${layout.hostRel} is a copy of ${layout.entryRel} (hard links are not supported here)`);
  if (pre.rg) place(pre.rg, path.join(packageDir, PATH_DIR, `rg${ctx.target.exe}`), true);
}

async function writeManifest(
  packageDir: string,
  layout: Layout,
  version: string,
  compiled: BuildPackageResult["compiled"],
  ctx: BuildContext,
): Promise<Result<PackageManifest>> {
  const files = await describeFiles(packageDir);
  if ("error" in files) return files;
  const manifest: PackageManifest = {
    layoutVersion: 1,
    name: "relay",
    variant: ctx.variant,
    version,
    target: ctx.target.name,
    ...(compiled ? { bunVersion: compiled.bunVersion } : {}),
    entrypoints: { main: layout.entryRel, codeModeHost: layout.hostRel },
    pathDir: PATH_DIR,
    files: files.ok,
  };
  const manifestPath = path.join(packageDir, MANIFEST_NAME);
  writeFileSync(manifestPath, serializeManifest(manifest));
  chmodSync(manifestPath, 0o644);
  return ok(manifest);
}

async function writeArchives(
  packageDir: string,
  archiveDir: string,
  formats: ArchiveFormat[],
  version: string,
  ctx: BuildContext,
): Promise<Result<BuiltArchive[]>> {
  const archives: BuiltArchive[] = [];
  for (const format of formats) {
    const started = Date.now();
    const a = await writeArchive(
      packageDir,
      path.join(archiveDir, `${ctx.variant}-${version}-${ctx.target.name}.${format}`),
      format,
    );
    if ("error" in a) return a;
    archives.push({ format, path: a.ok.path, bytes: a.ok.bytes, ms: Date.now() - started });
    ctx.log(`wrote ${a.ok.path} (${a.ok.bytes} bytes)`);
  }
  return ok(archives);
}
