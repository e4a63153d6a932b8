/** `relay package build|verify`: the canonical package directory, its archives, and checks. */
import { Command, Option } from "@commander-js/extra-typings";
import { ARCHIVE_FORMATS, parseArchiveFormats } from "../package/archive.ts";
import { buildPackage, USAGE_ERROR_CODES } from "../package/builder.ts";
import { VARIANTS } from "../package/manifest.ts";
import { TARGET_NAMES } from "../package/targets.ts";
import { verifyPackage } from "../package/verify.ts";
import type { ErrorValue } from "../util/result.ts";
import { ExitCode } from "./usage.ts";

function failWith(e: ErrorValue, json: boolean): never {
  const code = USAGE_ERROR_CODES.has(e.code) ? ExitCode.Usage : ExitCode.Failure;
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: e })}\n`);
  process.stderr.write(`relay: ${e.message}\n`);
  process.exit(code);
}

export function packageCommand() {
  const pkg = new Command("package").description(
    "build the canonical relay package directory and its archives, and verify them",
  );
  pkg.addCommand(buildCommand());
  addVerify(pkg);
  return pkg;
}

function buildOptions() {
  return new Command("build")
    .description("build the package directory for a target, and optionally reproducible archives of it")
    .option("--target <target>", `target platform: ${TARGET_NAMES.join(", ")} (default: this host)`)
    .addOption(new Option("--variant <variant>", "entrypoint binary name").choices(VARIANTS).default("relay" as const))
    .option(
      "--package-dir <dir>",
      "package directory to create; must be empty unless --force (default: dist/package/<variant>-<target>, replaced)",
    )
    .option("--force", "replace a non-empty package directory", false)
    .option("--archive <formats>", `comma-separated archive formats: ${ARCHIVE_FORMATS.join(",")}`)
    .option("--archive-dir <dir>", "where archives go (default: the package directory's parent)")
    .option("--entrypoint-bin <file>", "prebuilt entrypoint binary for the target (used as is, never rebuilt)")
    .option(
      "--code-mode-host-bin <file>",
      "prebuilt code-mode host (default: a hard link to the entrypoint, which re-execs itself)",
    )
    .option("--rg-bin <file>", "ripgrep binary for the target, placed at relay-path/rg")
    .option(
      "--compile-executable-path <file>",
      "the target's bun executable (from @oven/bun-<target>) for offline cross builds",
    )
    .option("--json", "print the result as JSON", false);
}

type BuildOpts = ReturnType<ReturnType<typeof buildOptions>["opts"]>;

function buildCommand() {
  return buildOptions().addHelpText("after", BUILD_HELP).action(buildAction);
}

const BUILD_HELP = `
Layout:
  relay-package.json                manifest: target, version, entrypoints, files (size, sha256)
  bin/relay[.exe]                   or bin/relay-executor (acts as \`relay executor\` when run bare)
  bin/relay-code-mode-host[.exe]    the same binary (acts as \`relay code-mode-host\` when run bare)
  relay-path/rg[.exe]               with --rg-bin
Archives go beside the package directory (or in --archive-dir) as <variant>-<version>-<target>.<format>;
an existing archive of that name is replaced.

Compiling bundles the source tree (RELAY_SOURCE_DIR, else found from here or the current
directory) with RELAY_BUN_PATH, node_modules/.bin/bun or bun on PATH; without a source tree, this
binary recompiles its own embedded bundle, acting as bun itself (its own target is a plain copy).
Cross builds without --compile-executable-path fetch @oven/bun-<target> (the compiling bun's
version) over HTTPS from the npm registry (RELAY_NPM_REGISTRY, default registry.npmjs.org) into
$RELAY_HOME/cache/bun/<version>/<target>/, checked by sha512, then by size and sha256 before every
reuse. Offline, the error names the tarball to place there.
Prebuilt binaries are used as they are and must match the target (ELF/Mach-O/PE header).

Exit codes: 0 built, 1 the build failed, 2 bad usage (target, variant, archive format,
prebuilt binary, non-empty package directory).

Examples:
  relay package build --archive tar.gz,zip
  relay package build --target linux-arm64 --package-dir /tmp/relay-arm64
  relay package verify dist/package/relay-0.1.0-linux-x64.tar.zst`;

/** The object without its undefined values (the builder's options are exactly optional). */
function definedOnly<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

async function buildAction(opts: BuildOpts): Promise<void> {
  const json = opts.json;
  let archives: (typeof ARCHIVE_FORMATS)[number][] = [];
  if (opts.archive !== undefined) {
    const a = parseArchiveFormats(opts.archive);
    if ("error" in a) failWith(a.error, json);
    archives = a.ok;
  }
  const { target, packageDir, archiveDir, entrypointBin, codeModeHostBin, rgBin, compileExecutablePath } = opts;
  const r = await buildPackage({
    ...definedOnly({ target, packageDir, archiveDir, entrypointBin, codeModeHostBin, rgBin, compileExecutablePath }),
    variant: opts.variant,
    archives,
    force: opts.force,
    log: json ? () => {} : (line) => process.stderr.write(`relay: ${line}\n`),
  });
  if ("error" in r) failWith(r.error, json);
  const b = r.ok;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ ok: true, packageDir: b.packageDir, manifest: b.manifest, archives: b.archives, compiled: b.compiled ?? null, notes: b.notes })}\n`,
    );
    return;
  }
  for (const a of b.archives) process.stdout.write(`Built relay package archive at ${a.path} (${a.bytes} bytes)\n`);
  process.stdout.write(
    `Built relay package directory at ${b.packageDir} (${b.manifest.target}, ${b.manifest.files.length} files)\n`,
  );
}

function addVerify(pkg: Command) {
  pkg
    .command("verify")
    .description("check a package directory or archive (.tar.gz, .tar.zst, .zip) against its relay-package.json")
    .argument("<path>", "package directory or archive")
    .option("--json", "print the report as JSON", false)
    .addHelpText(
      "after",
      "\nExit codes: 0 consistent, 1 problems found (listed), 2 not a package directory or archive.",
    )
    .action(async (target, opts) => {
      const r = await verifyPackage(target);
      if ("error" in r) failWith({ ...r.error, code: "bad_archive_format" }, opts.json);
      const rep = r.ok;
      if (opts.json)
        process.stdout.write(
          `${JSON.stringify({ ok: rep.problems.length === 0, source: rep.source, kind: rep.kind, files: rep.files, target: rep.manifest?.target ?? null, problems: rep.problems })}\n`,
        );
      else if (rep.problems.length === 0)
        process.stdout.write(
          `OK ${rep.source}: ${rep.files} files match relay-package.json (${rep.manifest?.target})\n`,
        );
      else {
        process.stdout.write(`FAILED ${rep.source}: ${rep.problems.length} problem(s)\n`);
        for (const p of rep.problems) process.stdout.write(`  ${p}\n`);
      }
      process.exit(rep.problems.length === 0 ? ExitCode.Ok : ExitCode.Failure);
    });
}
