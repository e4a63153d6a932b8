/**
 * Builds the single `relay` executable: `bun scripts/build.ts [--outfile dist/relay] [--target bun-linux-x64]`.
 * Bun must run this script (it is the compiler); `npm run build` does that.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export interface BuildOptions {
  outfile?: string;
  /** A `bun-<os>-<arch>[-baseline|-musl]` target; default: this host. */
  target?: string;
  /** A bun executable for the target, for offline cross builds. */
  compileExecutablePath?: string;
  bunPath?: string;
}

export function buildBinary(options: BuildOptions = {}): { outfile: string; bytes: number; ms: number } {
  const outfile = path.resolve(options.outfile ?? path.join(ROOT, "dist/relay"));
  mkdirSync(path.dirname(outfile), { recursive: true });
  const bun = options.bunPath ?? (process.versions.bun ? process.execPath : path.join(ROOT, "node_modules/.bin/bun"));
  const args = ["build", "--compile", "--minify", "--bytecode", path.join(ROOT, "src/main.ts"), "--outfile", outfile];
  if (options.target) args.push(`--target=${options.target}`);
  if (options.compileExecutablePath) args.push(`--compile-executable-path=${options.compileExecutablePath}`);
  const started = Date.now();
  const r = spawnSync(bun, args, { cwd: ROOT, encoding: "utf8" });
  // bun can exit 0 without writing the output (e.g. a failed download), so check the file too.
  if (r.status !== 0 || !existsSync(outfile)) {
    throw new Error(`bun build failed (exit ${r.status}):\n${r.stderr || r.stdout}`);
  }
  return { outfile, bytes: statSync(outfile).size, ms: Date.now() - started };
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  try {
    const r = buildBinary({ outfile: opt("--outfile"), target: opt("--target"), compileExecutablePath: opt("--compile-executable-path") });
    process.stdout.write(`built ${path.relative(process.cwd(), r.outfile)} (${(r.bytes / 1048576).toFixed(1)} MiB) in ${r.ms} ms\n`);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
}
