import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repo root, found by walking up to relay's package.json (works from bundled tests too). */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, "package.json");
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "relay") return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

export const REPO_ROOT = findRoot();
export const MAIN_TS = path.join(REPO_ROOT, "src/main.ts");
/** Node cannot run the .ts sources; scripts/test-portable.ts bundles relay here first. */
export const NODE_BUNDLE = path.join(REPO_ROOT, "dist/node/relay.mjs");
