/**
 * What compiling needs: the Relay source tree (src/main.ts + package.json) and a bun executable.
 * Under Bun from source, bun is process.execPath; from a compiled binary (or Node/Deno) it is
 * RELAY_BUN_PATH, else node_modules/.bin/bun beside the source tree, else `bun` on PATH.
 */

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { err, ok, type Result } from "../util/result.ts";
import { currentRuntime } from "../util/runtime.ts";
import { findOnPath, isExecutableFile } from "../util/which.ts";

type Env = Record<string, string | undefined>;

export interface SourceTree {
  root: string;
  main: string;
  version: string;
}

function isSourceRoot(dir: string): boolean {
  if (!existsSync(path.join(dir, "src", "main.ts"))) return false;
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown };
    return pkg.name === "relay";
  } catch {
    return false;
  }
}

function readVersion(root: string): string {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version?: unknown };
  return typeof pkg.version === "string" ? pkg.version : "0.0.0";
}

/** RELAY_SOURCE_DIR, else the tree this module was loaded from, else cwd and its parents. */
export function findSourceTree(env: Env = process.env, cwd: string = process.cwd()): Result<SourceTree> {
  const tree = (root: string): SourceTree => ({
    root,
    main: path.join(root, "src", "main.ts"),
    version: readVersion(root),
  });
  const explicit = env.RELAY_SOURCE_DIR?.trim();
  if (explicit) {
    const root = path.resolve(explicit);
    if (isSourceRoot(root)) return ok(tree(root));
    return err(
      "no_source_tree",
      `RELAY_SOURCE_DIR=${explicit} is not a Relay source tree (no src/main.ts or package.json named "relay")`,
    );
  }
  if (currentRuntime() !== "bun-compiled" && import.meta.url.startsWith("file:")) {
    const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
    if (isSourceRoot(here)) return ok(tree(here));
  }
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (isSourceRoot(dir)) return ok(tree(dir));
    if (path.dirname(dir) === dir) break;
  }
  return err(
    "no_source_tree",
    "cannot find the Relay source tree (src/main.ts) to compile: run from the repository or set RELAY_SOURCE_DIR, or pass prebuilt binaries with --entrypoint-bin",
  );
}

function onPath(name: string, env: Env): string | undefined {
  return findOnPath(name, env.PATH);
}

/** The bun that compiles. `sourceRoot` enables the node_modules/.bin/bun lookup. */
export function findBun(sourceRoot: string | undefined, env: Env = process.env): Result<string> {
  const explicit = env.RELAY_BUN_PATH?.trim();
  if (explicit) {
    if (isExecutableFile(explicit)) return ok(path.resolve(explicit));
    return err("no_bun", `RELAY_BUN_PATH=${explicit} is not an executable file`);
  }
  if (currentRuntime() === "bun") return ok(process.execPath);
  if (sourceRoot) {
    const local = path.join(sourceRoot, "node_modules", ".bin", process.platform === "win32" ? "bun.exe" : "bun");
    if (isExecutableFile(local)) return ok(local);
  }
  const p = onPath("bun", env);
  if (p) return ok(p);
  return err(
    "no_bun",
    "compiling needs bun: set RELAY_BUN_PATH, run `npm install` in the source tree (node_modules/.bin/bun), or put bun on PATH",
  );
}

/** The version of a bun executable (`process.versions.bun` when it is the running runtime). */
export function bunVersion(bun: string): Result<string> {
  if (currentRuntime() === "bun" && path.resolve(bun) === path.resolve(process.execPath) && process.versions.bun)
    return ok(process.versions.bun);
  const r = spawnSync(bun, ["--version"], { encoding: "utf8", timeout: 30_000 });
  const v = r.stdout?.trim();
  if (r.status !== 0 || !v || !/^\d+\.\d+\.\d+/.test(v)) {
    return err("no_bun", `cannot run ${bun} --version: ${(r.error?.message ?? r.stderr) || `exit ${r.status}`}`);
  }
  return ok(v);
}
