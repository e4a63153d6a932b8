/**
 * Project instructions (AGENTS.md) on the executor's own filesystem: one file per directory from
 * the repository root (the nearest `.git` above cwd) down to cwd, root first, within a byte
 * budget. Without a repository only cwd is looked at. Read here, not by the orchestrator, so a
 * remote executor's workspace gives its own instructions.
 */
import { open, stat } from "node:fs/promises";
import path from "node:path";
import type { ProjectDoc, ProjectDocsResult } from "../contracts/project-docs.ts";
import { wholeCharsEnd } from "../util/utf8.ts";
import { projectDirs } from "./project-dirs.ts";

/** The first name in `dir` that is a regular file (a symlink to one counts). */
async function docIn(dir: string, names: string[]): Promise<string | undefined> {
  for (const name of names) {
    const file = path.join(dir, name);
    const s = await stat(file).catch(() => undefined);
    if (s?.isFile()) return file;
  }
  return undefined;
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

export async function readProjectDocs(cwd: string, names: string[], maxBytes: number): Promise<ProjectDocsResult> {
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
