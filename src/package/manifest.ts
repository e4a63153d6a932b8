/**
 * `relay-package.json`: what a package directory holds. Written last by the builder, checked by
 * `relay package verify`. Lists every other file with its size, sha256 and executable bit.
 */

import { createHash } from "node:crypto";
import { createReadStream, lstatSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { MANIFEST_NAME, PATH_DIR } from "../util/package-layout.ts";
import { err, ok, type Result } from "../util/result.ts";
import { TARGET_NAMES } from "./targets.ts";

export { MANIFEST_NAME, PATH_DIR };

export const LAYOUT_VERSION = 1;
export const VARIANTS = ["relay", "relay-executor"] as const;
export type Variant = (typeof VARIANTS)[number];

const RelPath = lazySchema(() =>
  z
    .string()
    .min(1)
    .refine(
      (p) => !p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\\"),
      "must be a relative POSIX path inside the package",
    ),
);

export const ManifestFileSchema = lazySchema(() =>
  z.object({
    path: RelPath,
    size: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    executable: z.boolean(),
  }),
);
export type ManifestFile = z.infer<typeof ManifestFileSchema>;

export const PackageManifestSchema = lazySchema(() =>
  z.object({
    layoutVersion: z.literal(LAYOUT_VERSION),
    name: z.literal("relay"),
    variant: z.enum(VARIANTS),
    version: z.string().min(1),
    target: z.enum(TARGET_NAMES),
    /** bun runtime version inside the executables (the one that compiled them), when known. */
    bunVersion: z.string().optional(),
    entrypoints: z.object({
      /** `bin/relay[.exe]` or `bin/relay-executor[.exe]`. */
      main: RelPath,
      codeModeHost: RelPath,
    }),
    pathDir: z.literal(PATH_DIR),
    files: z.array(ManifestFileSchema),
  }),
);
export type PackageManifest = z.infer<typeof PackageManifestSchema>;

export function serializeManifest(m: PackageManifest): string {
  return `${JSON.stringify(PackageManifestSchema.parse(m), null, 2)}\n`;
}

export function parseManifest(text: string, label = MANIFEST_NAME): Result<PackageManifest> {
  return parseJsonWith(PackageManifestSchema, text, label, { code: "bad_manifest" });
}

export function readManifest(dir: string): Result<PackageManifest> {
  const file = path.join(dir, MANIFEST_NAME);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    return err("bad_manifest", `cannot read ${file}: ${(e as Error).message}`);
  }
  return parseManifest(text, file);
}

export async function sha256File(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest("hex");
}

export interface TreeEntry {
  /** POSIX path relative to the root; directories end without a slash. */
  path: string;
  type: "file" | "dir";
  /** Permission bits (mode & 0o777). */
  mode: number;
  size: number;
  abs: string;
  /** `dev:ino` of a file with more than one hard link, to tell which paths share their bytes. */
  linkKey?: string;
}

/** Every file and directory under `root`, sorted by POSIX relative path. Symlinks are refused. */
export function walkTree(root: string): Result<TreeEntry[]> {
  const out: TreeEntry[] = [];
  const visit = (rel: string): string | undefined => {
    const abs = rel ? path.join(root, ...rel.split("/")) : root;
    for (const name of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const full = path.join(abs, name);
      const st = lstatSync(full, { bigint: true });
      if (st.isSymbolicLink()) return `${r} is a symbolic link; packages hold regular files only`;
      if (st.isDirectory()) {
        out.push({ path: r, type: "dir", mode: Number(st.mode & 0o777n), size: 0, abs: full });
        const e = visit(r);
        if (e) return e;
      } else if (st.isFile()) {
        const linkKey = st.nlink > 1n ? { linkKey: `${st.dev}:${st.ino}` } : {};
        out.push({
          path: r,
          type: "file",
          mode: Number(st.mode & 0o777n),
          size: Number(st.size),
          abs: full,
          ...linkKey,
        });
      } else return `${r} is not a regular file or directory`;
    }
    return undefined;
  };
  try {
    const e = visit("");
    if (e) return err("bad_package", e);
  } catch (e) {
    return err("bad_package", `cannot read ${root}: ${(e as Error).message}`);
  }
  out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return ok(out);
}

/** The `files` list for a package directory (everything but the manifest). */
export async function describeFiles(root: string): Promise<Result<ManifestFile[]>> {
  const tree = walkTree(root);
  if ("error" in tree) return tree;
  const files: ManifestFile[] = [];
  const linked = new Map<string, string>();
  for (const e of tree.ok) {
    if (e.type !== "file" || e.path === MANIFEST_NAME) continue;
    const sha256 = (e.linkKey && linked.get(e.linkKey)) || (await sha256File(e.abs));
    if (e.linkKey) linked.set(e.linkKey, sha256);
    files.push({ path: e.path, size: e.size, sha256, executable: (e.mode & 0o100) !== 0 });
  }
  return ok(files);
}
