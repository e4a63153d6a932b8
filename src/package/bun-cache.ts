/**
 * The bun runtime for a cross target, cached at RELAY_HOME/cache/bun/<version>/<target>/ as
 * `bun[.exe]` + `meta.json` (size, sha256). A cached copy is used only when both match; otherwise
 * it is deleted and fetched again: the `@oven/bun-<target>` tarball from the npm registry over
 * HTTPS (checked against the registry's sha512), or, offline, a tarball the user placed in that
 * directory; `package/bin/bun` is extracted from it. The fetcher is injectable for tests.
 */

import { createHash } from "node:crypto";
import {
  chmodSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import * as tar from "tar-stream";
import { z } from "zod";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { checkBinaryForTarget } from "./binary-header.ts";
import { sha256File } from "./manifest.ts";
import type { TargetInfo } from "./targets.ts";

export const CacheMetaSchema = lazySchema(() =>
  z.object({
    package: z.string(),
    version: z.string(),
    target: z.string(),
    file: z.string(),
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    fetchedAt: z.string(),
  }),
);
export type CacheMeta = z.infer<typeof CacheMetaSchema>;

type Env = Record<string, string | undefined>;

/** Puts the target's bun executable at `dest`; returns an error value on failure. */
export type BunFetcher = (spec: {
  pkg: string;
  version: string;
  target: TargetInfo;
  dest: string;
  registry: string;
  log?: (line: string) => void;
}) => Promise<Result<null>>;

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
  /** For the registry (RELAY_NPM_REGISTRY, npm_config_registry). */
  env?: Env;
  log?: (line: string) => void;
}

/**
 * No lock: two builds that fill the same empty cache entry at once can disturb each other; the
 * loser fails with an error value and a rerun reuses the winner's verified copy.
 */
export async function ensureTargetBun(opts: EnsureOptions): Promise<Result<CachedBun>> {
  try {
    return await ensure(opts);
  } catch (e) {
    return err(
      "fetch_failed",
      `bun runtime cache at ${bunCacheDir(opts.home, opts.version, opts.target)}: ${(e as Error).message}`,
    );
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
    const meta =
      problem === undefined
        ? parseJsonWith(CacheMetaSchema, readFileSync(metaPath, "utf8"), "meta.json", { code: "bad_cache_meta" })
        : undefined;
    if (meta && "ok" in meta) return ok({ path: bin, fetched: false, notes, meta: meta.ok });
    notes.push(`cached bun ${version} for ${target.name} at ${dir} is unusable (${problem}); refetching`);
    rmSync(bin, { force: true });
    rmSync(metaPath, { force: true });
  }
  mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `${file}.tmp-${process.pid}`);
  const registry = registryUrl(opts.env);
  const placed = path.join(dir, tarballName(target.ovenPackage, version));
  const usePlaced = existsSync(placed);
  const fetched = usePlaced
    ? await extractBun(readFileSync(placed), target, tmp, placed)
    : await (opts.fetcher ?? registryFetcher)({
        pkg: target.ovenPackage,
        version,
        target,
        dest: tmp,
        registry,
        ...(opts.log ? { log: opts.log } : {}),
      });
  if ("error" in fetched) {
    rmSync(tmp, { force: true });
    if (usePlaced) return fetched;
    const url = `${registry}/${target.ovenPackage}/-/${tarballName(target.ovenPackage, version)}`;
    return err(
      fetched.error.code,
      `${fetched.error.message}\nOffline? Put ${url} at ${placed} (relay extracts and checks it), or pass --compile-executable-path with a bun ${version} executable for ${target.name}.`,
    );
  }
  if (usePlaced) notes.push(`used the tarball placed at ${placed}`);
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
  const parsed = parseJsonWith(CacheMetaSchema, readFileSync(metaPath, "utf8"), "meta.json", {
    code: "bad_cache_meta",
  });
  if ("error" in parsed) return parsed.error.message.split("\n")[0];
  const meta: CacheMeta = parsed.ok;
  const size = statSync(bin).size;
  if (size !== meta.size) return `size ${size} != recorded ${meta.size}`;
  const sha = await sha256File(bin);
  if (sha !== meta.sha256) return `sha256 ${sha.slice(0, 12)}… != recorded ${meta.sha256.slice(0, 12)}…`;
  return undefined;
}

/** The npm registry to fetch from: RELAY_NPM_REGISTRY, else npm's own setting, else registry.npmjs.org. */
export function registryUrl(env: Env = process.env): string {
  return (env.RELAY_NPM_REGISTRY?.trim() || env.npm_config_registry?.trim() || "https://registry.npmjs.org").replace(
    /\/+$/,
    "",
  );
}

/** npm's file name for a package tarball: `@oven/bun-linux-aarch64`@1.4.5 → bun-linux-aarch64-1.4.5.tgz. */
export function tarballName(pkg: string, version: string): string {
  return `${pkg.replace(/^@[^/]+\//, "")}-${version}.tgz`;
}

const VersionDocSchema = lazySchema(() =>
  z.object({
    dist: z.object({ tarball: z.string().url(), integrity: z.string().optional(), shasum: z.string().optional() }),
  }),
);

/** Checks `bytes` against the registry's `integrity` (sha512, as npm does), else its sha1 `shasum`. */
function checkIntegrity(bytes: Uint8Array, dist: z.infer<typeof VersionDocSchema>["dist"]): string | undefined {
  const sri = dist.integrity?.split(/\s+/).find((s) => s.startsWith("sha512-"));
  if (sri) {
    const got = `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
    return got === sri ? undefined : `sha512 ${got.slice(0, 20)}… != registry's ${sri.slice(0, 20)}…`;
  }
  if (dist.shasum) {
    const got = createHash("sha1").update(bytes).digest("hex");
    return got === dist.shasum ? undefined : `sha1 ${got} != registry's ${dist.shasum}`;
  }
  return "the registry gives no integrity or shasum to check it against";
}

async function download(url: string): Promise<Uint8Array> {
  const res = await fetch(url, { signal: AbortSignal.timeout(600_000), redirect: "follow" });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/**
 * The npm registry over HTTPS, no npm needed: the version document names the tarball and its
 * sha512; the tarball is checked against it, then `package/bin/bun[.exe]` is extracted.
 */
export const registryFetcher: BunFetcher = async ({ pkg, version, target, dest, registry, log }) => {
  const docUrl = `${registry}/${pkg}/${version}`;
  let tgz: Uint8Array;
  let dist: z.infer<typeof VersionDocSchema>["dist"];
  try {
    const res = await fetch(docUrl, { signal: AbortSignal.timeout(60_000), headers: { accept: "application/json" } });
    if (!res.ok)
      return err(
        "fetch_failed",
        `GET ${docUrl}: HTTP ${res.status}${res.status === 404 ? ` (no ${pkg}@${version} on this registry)` : ""}`,
      );
    const doc = VersionDocSchema.safeParse(await res.json());
    if (!doc.success) return err("fetch_failed", `GET ${docUrl}: not an npm version document (no dist.tarball)`);
    dist = doc.data.dist;
    log?.(`downloading ${dist.tarball}`);
    tgz = await download(dist.tarball);
  } catch (e) {
    return err(
      "fetch_failed",
      `cannot download ${pkg}@${version} from ${registry}: ${(e as Error).cause ? String((e as Error).cause) : (e as Error).message}`,
    );
  }
  const bad = checkIntegrity(tgz, dist);
  if (bad) return err("fetch_failed", `${dist.tarball} failed its integrity check (${bad}); nothing was cached`);
  return extractBun(tgz, target, dest, `${pkg}@${version}`);
};

/** Streams `package/bin/bun[.exe]` out of an npm tarball into `dest`. */
export async function extractBun(
  tgz: Uint8Array,
  target: TargetInfo,
  dest: string,
  what: string,
): Promise<Result<null>> {
  const member = `package/bin/bun${target.exe}`;
  try {
    let found = false;
    const extract = tar.extract();
    const feed = pipeline(Readable.from([tgz]), createGunzip(), extract as unknown as NodeJS.WritableStream);
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
    return found ? ok(null) : err("fetch_failed", `${what} has no ${member}`);
  } catch (e) {
    return err("fetch_failed", `${what}: cannot read the tarball: ${(e as Error).message}`);
  }
}
