/**
 * One compiled relay for every Bun test process of a run: the first worker that needs it builds
 * `dist/test-relay/<source hash>/relay` (about 4 s), the others wait for it, and later runs reuse
 * it until a source file changes. A compiled relay starts in a third of the CPU time that
 * `bun src/main.ts` takes (no transpiling, bytecode), and the suite starts relay about a thousand
 * times. Deno and Node still run the sources (test/support/self.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildBinary } from "../../scripts/build.ts";
import { REPO_ROOT } from "./paths.ts";

const CACHE = path.join(REPO_ROOT, "dist/test-relay");
/** What a build reads besides src/: the build script and the locked dependencies. */
const BUILD_INPUTS = ["scripts/build.ts", "package.json", "package-lock.json"];
/** How long a worker waits for another one's build before it reports the lock. */
const WAIT_LIMIT_MS = 180_000;

let built: string | undefined;

/** The shared compiled relay's path, built first if the sources changed since the last build. */
export function sharedRelay(): string {
  if (built) return built;
  const dir = path.join(CACHE, sourceHash());
  const binary = path.join(dir, "relay");
  if (!existsSync(binary)) buildOnce(dir, binary);
  built = binary;
  return binary;
}

/** sha256 of every file under src/ and of BUILD_INPUTS, names included, in a fixed order. */
function sourceHash(): string {
  const hash = createHash("sha256");
  const add = (rel: string) => {
    hash.update(`${rel}\0`);
    hash.update(readFileSync(path.join(REPO_ROOT, rel)));
  };
  for (const rel of filesUnder("src")) add(rel);
  for (const rel of BUILD_INPUTS) if (existsSync(path.join(REPO_ROOT, rel))) add(rel);
  return hash.digest("hex").slice(0, 16);
}

function filesUnder(rel: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(REPO_ROOT, rel), { withFileTypes: true }).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    const child = `${rel}/${entry.name}`;
    if (entry.isDirectory()) out.push(...filesUnder(child));
    else if (entry.isFile()) out.push(child);
  }
  return out;
}

/**
 * Builds under a lock directory (mkdir is atomic), so parallel workers compile once; a lock left
 * by a dead process is taken over. The binary appears by rename, whole or not at all.
 */
function buildOnce(dir: string, binary: string): void {
  mkdirSync(CACHE, { recursive: true });
  const lock = `${dir}.lock`;
  const deadline = Date.now() + WAIT_LIMIT_MS;
  while (!tryLock(lock)) {
    if (existsSync(binary)) return;
    if (Date.now() > deadline) throw new Error(`waited 180 s for ${lock}; remove it if no test run is building relay`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
  try {
    if (existsSync(binary)) return;
    removeOlderBuilds(dir);
    mkdirSync(dir, { recursive: true });
    const partial = path.join(dir, `relay.partial-${process.pid}`);
    buildBinary({ outfile: partial });
    renameSync(partial, binary);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(path.join(lock, "pid"), String(process.pid));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    if (!lockHolderAlive(lock)) rmSync(lock, { recursive: true, force: true });
    return false;
  }
}

function lockHolderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(lock, "pid"), "utf8"));
  } catch {
    return true; // just made, its pid not yet written
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Each build is 120 MiB: keep only the one being made (older sources' builds are never reused). */
function removeOlderBuilds(keep: string): void {
  for (const name of readdirSync(CACHE)) {
    const entry = path.join(CACHE, name);
    if (entry !== keep && /^[0-9a-f]{16}$/.test(name)) rmSync(entry, { recursive: true, force: true });
  }
}
