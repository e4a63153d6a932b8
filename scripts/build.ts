/**
 * Builds the single `relay` executable: `bun scripts/build.ts [--outfile dist/relay] [--target bun-linux-x64]`.
 * Bun must run this script (it is the compiler); `npm run build` does that. The binary carries
 * its own bundle, so it can later package itself for other targets (src/package/compile.ts).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { compileSource } from "../src/package/compile.ts";
import { hostTarget, parseTarget } from "../src/package/targets.ts";

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
  const bun = options.bunPath ?? (process.versions.bun ? process.execPath : path.join(ROOT, "node_modules/.bin/bun"));
  const target = options.target ? parseTarget(options.target.replace(/^bun-/, "")) : hostTarget();
  if ("error" in target) throw new Error(target.error.message);
  const r = compileSource({
    bun: { path: bun },
    sourceRoot: ROOT,
    target: target.ok,
    host: !options.target,
    outfile,
    ...(options.compileExecutablePath ? { compileExecutablePath: options.compileExecutablePath } : {}),
  });
  if ("error" in r) throw new Error(r.error.message);
  return r.ok;
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  try {
    const r = buildBinary({
      outfile: opt("--outfile"),
      target: opt("--target"),
      compileExecutablePath: opt("--compile-executable-path"),
    });
    process.stdout.write(
      `built ${path.relative(process.cwd(), r.outfile)} (${(r.bytes / 1048576).toFixed(1)} MiB) in ${r.ms} ms\n`,
    );
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
}
