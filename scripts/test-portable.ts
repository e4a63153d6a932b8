/**
 * Runs the runtime-portable test suites under Deno or Node (Bun runs everything via `npm test`).
 *   bun scripts/test-portable.ts deno|node
 * Node 20 cannot run TypeScript, so each test file and relay itself are bundled to ESM first.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Suites that need no PTY, bun:sqlite or compiler. */
export const PORTABLE_DIRS = [
  "test/protocol",
  "test/model",
  "test/session",
  "test/config",
  "test/policy",
  "test/capabilities",
  "test/mcp",
  "test/infty",
  "test/codemode",
  "test/memories",
  "test/package",
  "test/executor/files",
  "test/executor/patch",
  "test/util",
];

function testFiles(): string[] {
  const out: string[] = [];
  for (const dir of PORTABLE_DIRS) {
    const abs = path.join(ROOT, dir);
    if (!existsSync(abs)) continue;
    for (const f of readdirSync(abs, { recursive: true }) as string[])
      if (f.endsWith(".test.ts")) out.push(path.join(dir, f));
  }
  return out.sort();
}

function run(cmd: string, args: string[]): number {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: "inherit" });
  return r.status ?? 1;
}

const runtime = process.argv[2];
const files = testFiles();
const bun = process.versions.bun ? process.execPath : path.join(ROOT, "node_modules/.bin/bun");
if (runtime === "deno") {
  process.exit(run(path.join(ROOT, "node_modules/.bin/deno"), ["test", "-A", "--no-check", ...files]));
} else if (runtime === "node") {
  const out = path.join(ROOT, "dist/node-tests");
  rmSync(out, { recursive: true, force: true });
  const bundle = (entries: string[], outdir: string, root: string) =>
    run(bun, [
      "build",
      "--target=node",
      "--packages=external",
      "--format=esm",
      "--entry-naming=[dir]/[name].mjs",
      "--root",
      root,
      "--outdir",
      outdir,
      ...entries,
    ]);
  // An outdir, not an outfile: the sandbox's C source is emitted beside the bundle as an asset.
  const relay = run(bun, [
    "build",
    "--target=node",
    "--packages=external",
    "--format=esm",
    "src/main.ts",
    "--outdir",
    "dist/node",
    "--entry-naming",
    "relay.mjs",
  ]);
  if (relay !== 0) process.exit(1);
  if (bundle(files, out, ROOT) !== 0) process.exit(1);
  const built = files.map((f) => path.join(out, f.replace(/\.ts$/, ".mjs")));
  process.exit(run(process.platform === "win32" ? "node.exe" : "node", ["--test", "--test-concurrency=1", ...built]));
} else {
  process.stderr.write("usage: bun scripts/test-portable.ts deno|node\n");
  process.exit(2);
}
