/**
 * Finding the user's repository and deciding what a new run starts from, before anything of
 * the run is written: the repository's top, its HEAD, a free branch name, and whether the
 * working tree is clean. A dirty tree is refused with the fix, or, with
 * `--include-uncommitted`, snapshotted as a commit through a temporary index (the user's
 * index, working tree, branch and HEAD stay as they are; only objects are added).
 */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { err, ok, type Result } from "../../util/result.ts";
import { git, gitLine } from "./git-cli.ts";
import { pushRemote } from "./push.ts";
import { defaultBranch, type RepoRecord, shortCommit } from "./record.ts";

/** What `relay infty run` asks for: a run on the repository at (or above) `dir`. */
export interface RepoRequest {
  dir: string;
  /** The run's branch (default relay/<run-id>). */
  branch?: string;
  /** Snapshot uncommitted changes as the branch's first commit instead of refusing them. */
  includeUncommitted?: boolean;
  /** Push the verified commit to `origin` on delivery (the repository must have that remote). */
  push?: boolean;
}

export interface FoundRepository {
  top: string;
  /** This worktree's git directory (its index, HEAD). */
  gitDir: string;
  /** The repository's own (objects, refs), shared by all its worktrees. */
  commonDir: string;
  head: string;
  branch: string | null;
}

/** The repository `dir` is in; null when it is in none. */
export async function findRepository(dir: string): Promise<Result<FoundRepository | null>> {
  const inside = await git(["rev-parse", "--is-inside-work-tree"], { cwd: dir, okCodes: [128] });
  if ("error" in inside) return inside;
  if (inside.ok.code !== 0 || inside.ok.stdout.trim() !== "true") return ok(null);
  const paths = await git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], { cwd: dir });
  if ("error" in paths) return paths;
  const [top, gitDir, common] = paths.ok.stdout.trim().split("\n");
  const head = await git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], { cwd: dir, okCodes: [1] });
  if ("error" in head) return head;
  if (head.ok.code !== 0)
    return err(
      "repo_no_commit",
      `the repository ${top} has no commit yet; commit its files first (git add -A && git commit -m "start"), then start the run again`,
    );
  const branch = await git(["symbolic-ref", "--quiet", "--short", "HEAD"], { cwd: dir, okCodes: [1] });
  if ("error" in branch) return branch;
  return ok({
    top: top!,
    gitDir: gitDir!,
    commonDir: path.resolve(dir, common!),
    head: head.ok.stdout.trim(),
    branch: branch.ok.code === 0 ? branch.ok.stdout.trim() : null,
  });
}

/** The first entries of `git status` of a dirty tree (none: clean). */
export async function dirtyEntries(top: string): Promise<Result<string[]>> {
  const r = await git(["status", "--porcelain=v1", "-z", "--untracked-files=normal"], { cwd: top });
  if ("error" in r) return r;
  return ok(r.ok.stdout.split("\0").filter(Boolean));
}

async function checkBranchFree(top: string, branch: string): Promise<Result<void>> {
  const valid = await git(["check-ref-format", "--branch", branch], { cwd: top, okCodes: [1, 128] });
  if ("error" in valid) return valid;
  if (valid.ok.code !== 0)
    return err(
      "invalid_branch",
      `--branch ${JSON.stringify(branch)} is not a valid branch name; use letters, digits, '/', '-', '_' and '.' (e.g. relay/fix-parser)`,
    );
  const exists = await git(["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { cwd: top, okCodes: [1] });
  if ("error" in exists) return exists;
  if (exists.ok.code === 0)
    return err(
      "branch_exists",
      `branch ${branch} already exists in ${top}; pick another with --branch NAME (or delete it: git branch -D ${branch})`,
    );
  return ok(undefined);
}

/**
 * A commit of the working tree as it is (tracked changes and untracked files not ignored), on
 * top of HEAD, made through a copy of the index so the user's own index is not touched.
 */
async function snapshotWorkingTree(found: FoundRepository, runId: string): Promise<Result<string>> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "relay-infty-index-"));
  try {
    const index = path.join(tmp, "index");
    await copyFile(path.join(found.gitDir, "index"), index).catch(() => undefined);
    const env = { GIT_INDEX_FILE: index };
    const added = await git(["add", "-A"], { cwd: found.top, env });
    if ("error" in added) return added;
    const tree = await gitLine(["write-tree"], { cwd: found.top, env });
    if ("error" in tree) return tree;
    const message = `relay infty ${runId}: the uncommitted changes of ${found.branch ?? "the detached HEAD"} when the run started`;
    return gitLine(["commit-tree", tree.ok, "-p", found.head, "-m", message], { cwd: found.top });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** What a new run on the repository records; refuses a dirty tree (unless asked to include it) or a taken branch. */
export async function prepareRepository(req: RepoRequest, runId: string): Promise<Result<RepoRecord>> {
  const found = await findRepository(req.dir);
  if ("error" in found) return found;
  if (!found.ok)
    return err(
      "not_a_repository",
      `${req.dir} is not inside a git repository; give one with -C <repo>, or run in the run store only with --no-repo`,
    );
  const repo = found.ok;
  const branch = req.branch ?? defaultBranch(runId);
  const free = await checkBranchFree(repo.top, branch);
  if ("error" in free) return free;
  if (req.push) {
    const remote = await pushRemote(repo.top);
    if ("error" in remote) return remote;
  }
  const dirty = await dirtyEntries(repo.top);
  if ("error" in dirty) return dirty;
  let start = repo.head;
  if (dirty.ok.length > 0) {
    if (!req.includeUncommitted) {
      const shown = dirty.ok
        .slice(0, 5)
        .map((e) => `  ${e}`)
        .join("\n");
      const more = dirty.ok.length > 5 ? `\n  … and ${dirty.ok.length - 5} more` : "";
      return err(
        "repo_dirty",
        `the working tree of ${repo.top} has uncommitted changes:\n${shown}${more}\nA run starts from a commit: commit them (git commit -am "..."), stash them (git stash -u), or pass --include-uncommitted to start the run's branch with a commit of them (your tree stays as it is). Nothing was started.`,
      );
    }
    const snap = await snapshotWorkingTree(repo, runId);
    if ("error" in snap) return snap;
    start = snap.ok;
  }
  return ok({
    path: repo.top,
    git_dir: repo.commonDir,
    branch,
    base_commit: repo.head,
    base_branch: repo.branch,
    start_commit: start,
    head_commit: start,
    ...(req.push ? { push: true } : {}),
  });
}

/** One line for progress: where the run works. */
export function describeRepo(r: RepoRecord): string {
  const from =
    r.start_commit === r.base_commit
      ? shortCommit(r.base_commit)
      : `${shortCommit(r.base_commit)} + your uncommitted changes (${shortCommit(r.start_commit)})`;
  return `${r.path} on branch ${r.branch}, from ${r.base_branch ?? "a detached HEAD"} at ${from}`;
}

/** Whether `spec` names a remote repository (scheme://… or scp-like user@host:path) rather than a path. */
export function isRepoUrl(spec: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(spec) || /^[^/\s:@]+@[^/\s:]+:/.test(spec);
}
