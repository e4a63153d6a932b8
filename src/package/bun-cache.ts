/**
 * The bun runtime for a cross target, cached at RELAY_HOME/cache/bun/<version>/<target>/ as
 * `bun[.exe]` + `meta.json` (size, sha256). A cached copy is used only when both match; otherwise
 * it is deleted and fetched again (`npm pack @oven/bun-<target>@<version>`, then `package/bin/bun`
 * is extracted from the tarball). The fetcher is injectable so tests can run offline.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, createReadStream, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import * as tar from "tar-stream";
import { z } from "zod";
import { err, ok, type Result } from "../util/result.ts";
import { checkBinaryForTarget } from "./binary-header.ts";
import { sha256File } from "./manifest.ts";
import type { TargetInfo } from "./targets.ts";

export const CacheMetaSchema = z.object({
  package: z.string(),
  version: z.string(),
  target: z.string(),
  file: z.string(),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  fetchedAt: z.string(),
});
export type CacheMeta = z.infer<typeof CacheMetaSchema>;

/** Puts the target's bun executable at `dest`; returns an error value on failure. */
export type BunFetcher = (spec: { pkg: string; version: string; target: TargetInfo; dest: string }) => Promise<Result<null>>;

export function bunCacheDir(home: string, version: string, target: TargetInfo): string {
  return path.join(home, "cache", "bun", version, target.name);
}

export interface CachedBun {
  path: string;
  /** true when it was fetched by this call. */
  fetched: boolean;
  /** Human-readable notes (e.g. "cache corrupt, refetched"). */
  notes: string[];
  meta: CacheMeta;
}

export interface EnsureOptions {
  home: string;
  version: string;
  target: TargetInfo;
  fetcher?: BunFetcher;
}

/**
 * No lock: two builds that fill the same empty cache entry at once can disturb each other; the
 * loser fails with an error value and a rerun reuses the winner's verified copy.
 */
export async function ensureTargetBun(opts: EnsureOptions): Promise<Result<CachedBun>> {
  try {
    return await ensure(opts);
  } catch (e) {
    return err("fetch_failed", `bun runtime cache at ${bunCacheDir(opts.home, opts.version, opts.target)}: ${(e as Error).message}`);
  }
}

async function ensure(opts: EnsureOptions): Promise<Result<CachedBun>> {
  const { home, version, target } = opts;
  const dir = bunCacheDir(home, version, target);
  const file = `bun${target.exe}`;
  const bin = path.join(dir, file);
  const metaPath = path.join(dir, "meta.json");
  const notes: string[] = [];
  if (existsSync(bin) || existsSync(metaPath)) {
    const problem = await checkCached(bin, metaPath);
    if (problem === undefined) {
      const meta = CacheMetaSchema.parse(JSON.parse(readFileSync(metaPath, "utf8")));
      return ok({ path: bin, fetched: false, notes, meta });
    }
    notes.push(`cached bun ${version} for ${target.name} at ${dir} is unusable (${problem}); refetching`);
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `${file}.tmp-${process.pid}`);
  const fetched = await (opts.fetcher ?? npmFetcher)({ pkg: target.ovenPackage, version, target, dest: tmp });
  if ("error" in fetched) {
    rmSync(tmp, { force: true });
    return fetched;
  }
  if (process.platform !== "win32") chmodSync(tmp, 0o755);
  const check = checkBinaryForTarget(tmp, target);
  if ("error" in check) {
    rmSync(tmp, { force: true });
    return err("fetch_failed", `fetched ${target.ovenPackage}@${version} but: ${check.error.message}`);
  }
  const meta: CacheMeta = {
    package: target.ovenPackage,
    version,
    target: target.name,
    file,
    size: statSync(tmp).size,
    sha256: await sha256File(tmp),
    fetchedAt: new Date().toISOString(),
  };
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  renameSync(tmp, bin);
  return ok({ path: bin, fetched: true, notes, meta });
}

async function checkCached(bin: string, metaPath: string): Promise<string | undefined> {
  if (!existsSync(bin)) return "executable missing";
  if (!existsSync(metaPath)) return "meta.json missing";
  let meta: CacheMeta;
  try {
    meta = CacheMetaSchema.parse(JSON.parse(readFileSync(metaPath, "utf8")));
  } catch (e) {
    return `meta.json invalid: ${(e as Error).message.split("\n")[0]}`;
  }
  const size = statSync(bin).size;
  if (size !== meta.size) return `size ${size} != recorded ${meta.size}`;
  const sha = await sha256File(bin);
  if (sha !== meta.sha256) return `sha256 ${sha.slice(0, 12)}… != recorded ${meta.sha256.slice(0, 12)}…`;
  return undefined;
}

/** `npm pack <pkg>@<version>` into a temp dir, then stream `package/bin/bun[.exe]` out of it. */
export const npmFetcher: BunFetcher = async ({ pkg, version, target, dest }) => {
  const work = mkdtempSync(path.join(os.tmpdir(), "relay-bun-fetch-"));
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const r = spawnSync(npm, ["pack", `${pkg}@${version}`, "--pack-destination", work, "--silent"], {
      cwd: work,
      encoding: "utf8",
      timeout: 600_000,
      shell: process.platform === "win32",
    });
    if (r.error) return err("fetch_failed", `cannot run npm to fetch ${pkg}@${version}: ${r.error.message} (or pass --compile-executable-path)`);
    const tgz = readdirSync(work).find((f) => f.endsWith(".tgz"));
    if (r.status !== 0 || !tgz) {
      return err("fetch_failed", `npm pack ${pkg}@${version} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim().slice(-2000)} (pass --compile-executable-path to build offline)`);
    }
    const member = `package/bin/bun${target.exe}`;
    let found = false;
    const extract = tar.extract();
    const feed = pipeline(createReadStream(path.join(work, tgz)), createGunzip(), extract as unknown as NodeJS.WritableStream);
    const consume = (async () => {
      for await (const entry of extract) {
        if (entry.header.name === member && entry.header.type === "file") {
          await pipeline(entry as unknown as NodeJS.ReadableStream, createWriteStream(dest));
          found = true;
        } else {
          entry.resume();
        }
      }
    })();
    await Promise.all([feed, consume]);
    if (!found) return err("fetch_failed", `${pkg}@${version} has no ${member}`);
    return ok(null);
  } catch (e) {
    return err("fetch_failed", `fetching ${pkg}@${version}: ${(e as Error).message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};
