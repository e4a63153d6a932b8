/**
 * Project instructions (AGENTS.md) on the executor's own filesystem: one file per directory from
 * the repository root (the nearest `.git` above cwd) down to cwd, root first, within a byte
 * budget. Without a repository only cwd is looked at. Read here, not by the orchestrator, so a
 * remote executor's workspace gives its own instructions.
 */
import { lstat, open, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { defineMethod, specSchemas } from "../contracts/method.ts";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./project-docs-checks.generated.ts";

export const DEFAULT_PROJECT_DOC_NAMES = ["AGENTS.override.md", "AGENTS.md"];

export const ProjectDocSchema = lazySchema(() =>
  z.object({
    path: z.string(),
    /** The file's size on disk. */
    bytes: z.number().int(),
    text: z.string(),
    /** The budget ran out inside this file: `text` holds its first part. */
    truncated: z.boolean(),
  }),
);
export type ProjectDoc = z.infer<typeof ProjectDocSchema>;

export const ProjectDocsMethod = defineMethod(
  "project_docs/read",
  lazySchema(() =>
    z.object({
      cwd: z.string(),
      /** Names tried in each directory, first match wins. */
      names: z.array(z.string().min(1)).min(1).default(DEFAULT_PROJECT_DOC_NAMES),
      max_bytes: z.number().int().min(0),
    }),
  ),
  lazySchema(() =>
    z.object({ docs: z.array(ProjectDocSchema), root: z.string().nullable(), warnings: z.array(z.string()) }),
  ),
);

/**
 * The schemas of the project-docs method, by the names of their generated checks
 * (npm run build:validators writes them to project-docs-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, specSchemas({ projectDocs: ProjectDocsMethod }));

/** cwd and its parents up to the directory holding `.git` (root first); just cwd without one. */
export async function projectDirs(cwd: string): Promise<{ root: string | null; dirs: string[] }> {
  const chain: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    chain.push(dir);
    if (await exists(path.join(dir, ".git"))) return { root: dir, dirs: chain.reverse() };
    if (path.dirname(dir) === dir) return { root: null, dirs: [path.resolve(cwd)] };
  }
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}

/** The first name in `dir` that is a regular file (a symlink to one counts). */
async function docIn(dir: string, names: string[]): Promise<string | undefined> {
  for (const name of names) {
    const file = path.join(dir, name);
    const s = await stat(file).catch(() => undefined);
    if (s?.isFile()) return file;
  }
  return undefined;
}

/** Where the last complete UTF-8 character of `buf` ends (a cut may have split the final one). */
export function wholeCharsEnd(buf: Uint8Array): number {
  let lead = buf.length - 1;
  while (lead > 0 && (buf[lead]! & 0xc0) === 0x80) lead--;
  if (lead < 0) return 0;
  const b = buf[lead]!;
  const size = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return buf.length - lead < size ? lead : buf.length;
}

/** At most `max` bytes of the file, cut back to a whole UTF-8 character. */
async function readPrefix(file: string, max: number): Promise<{ text: string; bytes: number }> {
  const fh = await open(file, "r");
  try {
    const bytes = (await fh.stat()).size;
    const buf = Buffer.alloc(Math.min(bytes, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const end = bytesRead < bytes ? wholeCharsEnd(buf.subarray(0, bytesRead)) : bytesRead;
    return { text: buf.subarray(0, end).toString("utf8"), bytes };
  } finally {
    await fh.close();
  }
}

export async function readProjectDocs(
  cwd: string,
  names: string[],
  maxBytes: number,
): Promise<z.infer<typeof ProjectDocsMethod.result>> {
  const warnings: string[] = [];
  if (maxBytes === 0) return { docs: [], root: null, warnings };
  const { root, dirs } = await projectDirs(cwd);
  const docs: ProjectDoc[] = [];
  let left = maxBytes;
  for (const dir of dirs) {
    const file = await docIn(dir, names);
    if (!file) continue;
    if (left <= 0) {
      warnings.push(`${file} skipped: project_doc_max_bytes (${maxBytes}) is used up by the files above it`);
      continue;
    }
    try {
      const { text, bytes } = await readPrefix(file, left);
      if (!text.trim()) continue;
      const truncated = Buffer.byteLength(text) < bytes;
      if (truncated)
        warnings.push(
          `${file} is ${bytes} bytes; only the first ${Buffer.byteLength(text)} fit in project_doc_max_bytes (${maxBytes}); raise it in config.toml or split the file`,
        );
      docs.push({ path: file, bytes, text, truncated });
      // A file that had to be cut ends the budget: what is left is less than a character.
      left = truncated ? 0 : left - Buffer.byteLength(text);
    } catch (e) {
      warnings.push(`${file} is not readable: ${(e as Error).message}; skipped`);
    }
  }
  return { docs, root, warnings };
}
