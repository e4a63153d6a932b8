/**
 * The memory folder is a one-commit git repository (isomorphic-git, no git binary): the commit is
 * the baseline of the last successful consolidation; the diff against it is what changed since.
 */
import fs from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { createTwoFilesPatch } from "diff";
import git from "isomorphic-git";
import { crashPoint } from "../util/crash-point.ts";
import { redactSecrets } from "../util/redact.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
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

/** A baseline being built (`.git.new-…`) or being replaced (`.git.old-…`): never memory content. */
const STAGING = /^\.git\.(new|old)-/;

async function listFiles(root: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (p === ".git" || p === DIFF_FILE || STAGING.test(p)) continue;
    if (e.isDirectory()) out.push(...(await listFiles(root, p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/**
 * Replaces any history with one commit of the current tree (minus the diff file), redacted
 * first. The new repository is built beside the old one (`.git.new-…`) and swapped in by two
 * renames, so a kill at any point leaves the previous baseline, the new one, or one of them
 * under a staging name that prepareWorkspace puts back.
 */
export async function resetBaseline(root: string, now: Date = new Date()): Promise<Result<string>> {
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
    await rm(path.join(root, DIFF_FILE), { force: true });
    // The commit must not preserve a secret a consolidator or a hand edit wrote.
    await redactFolder(root, [".git", ...(await stagingDirs(root))]);
    crashPoint("baseline:redacted");
    const staged = path.join(root, `.git.new-${process.pid}-${Date.now()}`);
    const oid = await commitTree(root, staged, now);
    crashPoint("baseline:committed");
    await swapIn(root, staged);
    return ok(oid);
  } catch (e) {
    return err("workspace_commit", `cannot reset the memory baseline in ${root}: ${errorMessage(e)}`);
  }
}

/** One commit of the folder's files in a new repository at `gitdir`. */
async function commitTree(root: string, gitdir: string, now: Date): Promise<string> {
  await git.init({ fs, dir: root, gitdir, defaultBranch: "main" });
  const files = await listFiles(root);
  if (files.length) await git.add({ fs, dir: root, gitdir, filepath: files });
  crashPoint("baseline:added");
  const timestamp = Math.floor(now.getTime() / 1000);
  const when = { timestamp, timezoneOffset: 0 };
  return git.commit({
    fs,
    dir: root,
    gitdir,
    message: "relay memories baseline",
    author: { ...AUTHOR, ...when },
    committer: { ...AUTHOR, ...when },
  });
}

/** `.git` → `.git.old-…`, `staged` → `.git`, then the old one is removed. */
async function swapIn(root: string, staged: string): Promise<void> {
  const live = path.join(root, ".git");
  const old = path.join(root, `.git.old-${process.pid}-${Date.now()}`);
  if (await exists(live)) await rename(live, old);
  crashPoint("baseline:moved-old");
  await rename(staged, live);
  crashPoint("baseline:moved-new");
  await rm(old, { recursive: true, force: true });
}

/** The staging names left in `root` (by a killed reset). */
async function stagingDirs(root: string): Promise<string[]> {
  return (await readdir(root).catch(() => [] as string[])).filter((n) => STAGING.test(n));
}

/** Why the repository at `gitdir` is not a usable baseline, or undefined: HEAD's commit, tree and blobs all read. */
export async function baselineProblem(root: string, gitdir = path.join(root, ".git")): Promise<string | undefined> {
  try {
    if (!(await stat(gitdir)).isDirectory()) return ".git is not a folder";
  } catch {
    return ".git is missing";
  }
  let oid: string;
  try {
    oid = await git.resolveRef({ fs, dir: root, gitdir, ref: "HEAD" });
  } catch (e) {
    return `HEAD names no commit (${errorMessage(e)})`;
  }
  try {
    const { commit } = await git.readCommit({ fs, dir: root, gitdir, oid });
    await readAllBlobs(root, gitdir, commit.tree, "");
  } catch (e) {
    return `the baseline commit ${oid.slice(0, 12)} cannot be read (${errorMessage(e)})`;
  }
  return undefined;
}

async function readAllBlobs(root: string, gitdir: string, tree: string, prefix: string): Promise<void> {
  const { tree: entries } = await git.readTree({ fs, dir: root, gitdir, oid: tree });
  for (const e of entries) {
    if (e.type === "tree") await readAllBlobs(root, gitdir, e.oid, `${prefix}${e.path}/`);
    else if (e.type === "blob") await git.readBlob({ fs, dir: root, gitdir, oid: e.oid });
  }
}

/**
 * After a kill during a reset: with no `.git`, a readable `.git.old-…` is the previous baseline
 * and goes back; every other staging folder is removed.
 */
async function recoverSwap(root: string): Promise<void> {
  const staging = await stagingDirs(root);
  if (!(await exists(path.join(root, ".git")))) {
    for (const name of staging
      .filter((n) => n.startsWith(".git.old-"))
      .sort()
      .reverse()) {
      if ((await baselineProblem(root, path.join(root, name))) === undefined) {
        await rename(path.join(root, name), path.join(root, ".git"));
        break;
      }
    }
  }
  for (const name of await stagingDirs(root)) await rm(path.join(root, name), { recursive: true, force: true });
}

export interface PreparedWorkspace {
  /** Set when the baseline was unreadable and was made again from the folder's files: why. */
  rebuilt?: string;
}

/**
 * Creates the folder, removes a stale diff file, puts back a baseline a killed reset left
 * aside, and checks the baseline reads (HEAD, its commit, tree and blobs). One that does not is
 * made again from the folder's files, and the reason is returned to be said once.
 */
export async function prepareWorkspace(root: string): Promise<Result<PreparedWorkspace>> {
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
    await rm(path.join(root, DIFF_FILE), { force: true });
    const hadBaseline = (await exists(path.join(root, ".git"))) || (await stagingDirs(root)).length > 0;
    await recoverSwap(root);
    const problem = await baselineProblem(root);
    if (problem === undefined) return ok({});
    const r = await resetBaseline(root);
    if ("error" in r) return r;
    return ok(hadBaseline ? { rebuilt: problem } : {});
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
      const before =
        c.status === "A"
          ? ""
          : new TextDecoder().decode((await git.readBlob({ fs, dir: root, oid: head, filepath: c.path })).blob);
      const after = c.status === "D" ? "" : await readFile(path.join(root, c.path), "utf8");
      const p = createTwoFilesPatch(
        c.status === "A" ? "/dev/null" : `a/${c.path}`,
        c.status === "D" ? "/dev/null" : `b/${c.path}`,
        before,
        after,
        "",
        "",
        { context: 3 },
      );
      patches.push(`diff --git a/${c.path} b/${c.path}\n${p.split("\n").slice(1).join("\n")}`);
    }
    // Hand edits are diffed too, and the consolidator (a model) reads this; names go into reports.
    return ok({
      changes: changes.map((c) => ({ ...c, path: safeRelativePath(c.path) })),
      patch: redactSecrets(patches.join("")),
    });
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
