/**
 * The memory folder is a one-commit git repository (isomorphic-git, no git binary): the commit is
 * the baseline of the last successful consolidation; the diff against it is what changed since.
 */
import fs from "node:fs";
import { mkdir, readdir, rm, stat, writeFile, readFile } from "node:fs/promises";
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import git from "isomorphic-git";
import { errorMessage, err, ok, type Result } from "../util/result.ts";
import { redactSecrets } from "../util/redact.ts";
import { redactFolder, safeRelativePath } from "./redact-files.ts";
import { DIFF_FILE } from "./storage.ts";

export const DIFF_CAP_BYTES = 4 * 1024 * 1024;
const AUTHOR = { name: "relay memories", email: "memories@relay.invalid" };

export interface WorkspaceChange {
  status: "A" | "M" | "D";
  path: string;
}

export interface WorkspaceDiff {
  changes: WorkspaceChange[];
  patch: string;
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

async function listFiles(root: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (p === ".git" || p === DIFF_FILE) continue;
    if (e.isDirectory()) out.push(...(await listFiles(root, p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Replaces any history with one commit of the current tree (minus the diff file), redacted first. */
export async function resetBaseline(root: string, now: Date = new Date()): Promise<Result<string>> {
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
    await rm(path.join(root, DIFF_FILE), { force: true });
    // The commit must not preserve a secret a consolidator or a hand edit wrote.
    await redactFolder(root, [".git"]);
    await rm(path.join(root, ".git"), { recursive: true, force: true });
    await git.init({ fs, dir: root, defaultBranch: "main" });
    const files = await listFiles(root);
    if (files.length) await git.add({ fs, dir: root, filepath: files });
    const timestamp = Math.floor(now.getTime() / 1000);
    const oid = await git.commit({
      fs,
      dir: root,
      message: "relay memories baseline",
      author: { ...AUTHOR, timestamp, timezoneOffset: 0 },
      committer: { ...AUTHOR, timestamp, timezoneOffset: 0 },
    });
    return ok(oid);
  } catch (e) {
    return err("workspace_commit", `cannot reset the memory baseline in ${root}: ${errorMessage(e)}`);
  }
}

/** Creates the folder, removes a stale diff file, and makes a baseline if there is none. */
export async function prepareWorkspace(root: string): Promise<Result<void>> {
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
    await rm(path.join(root, DIFF_FILE), { force: true });
    const gitDir = path.join(root, ".git");
    let valid = false;
    if (await exists(gitDir)) {
      try {
        await git.resolveRef({ fs, dir: root, ref: "HEAD" });
        valid = (await stat(gitDir)).isDirectory();
      } catch {
        valid = false;
      }
    }
    if (!valid) {
      const r = await resetBaseline(root);
      if ("error" in r) return r;
    }
    return ok(undefined);
  } catch (e) {
    return err("workspace_prepare", `cannot prepare the memory folder ${root}: ${errorMessage(e)}`);
  }
}

/** Changes since the baseline commit, with a unified diff (deleted files show their old content). */
export async function workspaceDiff(root: string): Promise<Result<WorkspaceDiff>> {
  try {
    await rm(path.join(root, DIFF_FILE), { force: true });
    const head = await git.resolveRef({ fs, dir: root, ref: "HEAD" });
    const matrix = await git.statusMatrix({ fs, dir: root, filter: (f) => f !== DIFF_FILE });
    const changes: WorkspaceChange[] = [];
    for (const [file, h, w] of matrix) {
      if (h === 0 && w !== 0) changes.push({ status: "A", path: file });
      else if (h === 1 && w === 0) changes.push({ status: "D", path: file });
      else if (h === 1 && w === 2) changes.push({ status: "M", path: file });
    }
    changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const patches: string[] = [];
    for (const c of changes) {
      const before = c.status === "A" ? "" : new TextDecoder().decode((await git.readBlob({ fs, dir: root, oid: head, filepath: c.path })).blob);
      const after = c.status === "D" ? "" : await readFile(path.join(root, c.path), "utf8");
      const p = createTwoFilesPatch(c.status === "A" ? "/dev/null" : `a/${c.path}`, c.status === "D" ? "/dev/null" : `b/${c.path}`, before, after, "", "", { context: 3 });
      patches.push(`diff --git a/${c.path} b/${c.path}\n${p.split("\n").slice(1).join("\n")}`);
    }
    // Hand edits are diffed too, and the consolidator (a model) reads this; names go into reports.
    return ok({ changes: changes.map((c) => ({ ...c, path: safeRelativePath(c.path) })), patch: redactSecrets(patches.join("")) });
  } catch (e) {
    return err("workspace_status", `cannot diff the memory folder ${root}: ${errorMessage(e)}`);
  }
}

export function renderDiffFile(d: WorkspaceDiff): string {
  let patch = d.patch;
  let trailer = "";
  const bytes = new TextEncoder().encode(patch);
  if (bytes.length > DIFF_CAP_BYTES) {
    let end = DIFF_CAP_BYTES;
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
    patch = new TextDecoder().decode(bytes.subarray(0, end));
    trailer = `\n[diff truncated at ${DIFF_CAP_BYTES} bytes]\n`;
  }
  const status = d.changes.length ? d.changes.map((c) => `- ${c.status} ${c.path}`).join("\n") : "- none";
  return `# Memory Workspace Diff\n\nGenerated by relay before consolidation: read it first and do not edit it.\n\n## Status\n\n${status}\n\n## Diff\n\n\`\`\`diff\n${patch}\n\`\`\`\n${trailer}`;
}

export async function writeDiffFile(root: string, d: WorkspaceDiff): Promise<Result<void>> {
  try {
    await writeFile(path.join(root, DIFF_FILE), renderDiffFile(d));
    return ok(undefined);
  } catch (e) {
    return err("workspace_diff_file", `cannot write ${DIFF_FILE}: ${errorMessage(e)}`);
  }
}
