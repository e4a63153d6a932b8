/** One `bun build --compile` of src/main.ts for a target. */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { err, ok, type Result } from "../util/result.ts";
import type { SourceTree } from "./toolchain.ts";
import type { TargetInfo } from "./targets.ts";

export interface CompileOptions {
  bun: string;
  source: SourceTree;
  target: TargetInfo;
  /** Omit `--target` (bun compiles for itself). */
  host: boolean;
  /** The target's bun executable, for offline cross builds. */
  compileExecutablePath?: string;
  outfile: string;
}

export function compileRelay(o: CompileOptions): Result<{ outfile: string; bytes: number; ms: number }> {
  mkdirSync(path.dirname(o.outfile), { recursive: true });
  rmSync(o.outfile, { force: true });
  const args = ["build", "--compile", "--minify", "--bytecode", o.source.main, "--outfile", o.outfile];
  if (!o.host) args.push(`--target=${o.target.bunTarget}`);
  if (o.compileExecutablePath) args.push(`--compile-executable-path=${o.compileExecutablePath}`);
  const started = Date.now();
  const r = spawnSync(o.bun, args, { cwd: o.source.root, encoding: "utf8", timeout: 600_000, maxBuffer: 64 << 20 });
  // bun can exit 0 without writing the output (e.g. a failed download): check the file too.
  if (r.error || r.status !== 0 || !existsSync(o.outfile)) {
    const why = r.error?.message ?? `exit ${r.status}`;
    return err("compile_failed", `${o.bun} ${args.join(" ")} failed (${why}):\n${(r.stderr || r.stdout || "").trim().slice(-4000)}`);
  }
  return ok({ outfile: o.outfile, bytes: statSync(o.outfile).size, ms: Date.now() - started });
}
