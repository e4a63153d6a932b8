/**
 * The run's two checkouts of the user's repository, both git worktrees inside the run store:
 * the Solver's (`checkout/`, on the run's branch) and the Verifiers' (`review/`, detached at
 * the commit under review, reset and cleaned before every round). Every operation here can be
 * run again after a crash and gives the same result, so `relay infty resume` simply repeats
 * the one that was cut short.
 */
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { err, ok, type Result } from "../../util/result.ts";
import { git, gitLine } from "./git-cli.ts";
import { checkoutDir, type RepoRecord, reviewDir } from "./record.ts";

/** HEAD of the worktree at `dir`, or undefined when there is no working worktree there. */
async function worktreeHead(dir: string): Promise<string | undefined> {
  if (!existsSync(path.join(dir, ".git"))) return undefined;
  const head = await gitLine(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], { cwd: dir });
  return "ok" in head && head.ok ? head.ok : undefined;
}

/**
 * A folder the run made for a worktree but git does not know as one (a crash cut `worktree add`
 * short): removed, with git's record of it, so the worktree can be added again.
 */
async function clearBrokenWorktree(repo: RepoRecord, dir: string): Promise<void> {
  if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
  await git(["worktree", "prune"], { cwd: repo.path });
}

/** The Solver's checkout, created on the run's branch if it is not there yet. */
export async function ensureCheckout(repo: RepoRecord, runDir: string): Promise<Result<string>> {
  const dir = checkoutDir(runDir);
  if (await worktreeHead(dir)) return onBranch(repo, dir);
  await clearBrokenWorktree(repo, dir);
  const exists = await git(["rev-parse", "--verify", "--quiet", `refs/heads/${repo.branch}`], {
    cwd: repo.path,
    okCodes: [1],
  });
  if ("error" in exists) return exists;
  // The branch outlives a lost checkout: it is checked out again where it stands.
  const args =
    exists.ok.code === 0
      ? ["worktree", "add", dir, repo.branch]
      : ["worktree", "add", "-b", repo.branch, dir, repo.start_commit];
  const added = await git(args, { cwd: repo.path });
  if ("error" in added)
    return err(
      "checkout_failed",
      `could not make the run's checkout of ${repo.path} at ${dir}: ${added.error.message}`,
    );
  return onBranch(repo, dir);
}

/** The checkout's path, if it is on the run's branch; a model with full access could have moved it. */
async function onBranch(repo: RepoRecord, dir: string): Promise<Result<string>> {
  const ref = await git(["symbolic-ref", "--quiet", "HEAD"], { cwd: dir, okCodes: [1] });
  if ("error" in ref) return ref;
  const at = ref.ok.stdout.trim();
  if (at !== `refs/heads/${repo.branch}`) {
    return err(
      "checkout_off_branch",
      `the run's checkout ${dir} is ${at ? `on ${at.replace("refs/heads/", "")}` : "detached"}, not on the run's branch ${repo.branch}; put it back with: git -C ${dir} checkout ${repo.branch}`,
    );
  }
  return ok(dir);
}

/**
 * Commits everything in the Solver's checkout (tracked changes, new files not ignored) to the
 * run's branch; no change: the branch's head as it is. Returns the commit and whether it is new.
 */
export async function commitCheckout(
  repo: RepoRecord,
  runDir: string,
  message: string,
): Promise<Result<{ commit: string; changed: boolean }>> {
  const dir = await ensureCheckout(repo, runDir);
  if ("error" in dir) return dir;
  const cwd = dir.ok;
  const added = await git(["add", "-A"], { cwd });
  if ("error" in added) return added;
  const staged = await git(["diff", "--cached", "--quiet"], { cwd, okCodes: [1] });
  if ("error" in staged) return staged;
  const changed = staged.ok.code === 1;
  if (changed) {
    const made = await git(["commit", "--quiet", "--no-verify", "-m", message], { cwd });
    if ("error" in made) return made;
  }
  const head = await gitLine(["rev-parse", "HEAD"], { cwd });
  return "error" in head ? head : ok({ commit: head.ok, changed });
}

/** The Verifiers' checkout, at exactly `commit` with nothing else in it. */
export async function prepareReview(repo: RepoRecord, runDir: string, commit: string): Promise<Result<string>> {
  const dir = reviewDir(runDir);
  if (!(await worktreeHead(dir))) {
    await clearBrokenWorktree(repo, dir);
    const added = await git(["worktree", "add", "--detach", dir, commit], { cwd: repo.path });
    if ("error" in added)
      return err("checkout_failed", `could not make the Verifiers' checkout at ${dir}: ${added.error.message}`);
  } else {
    const moved = await git(["checkout", "--quiet", "--detach", "--force", commit], { cwd: dir });
    if ("error" in moved) return moved;
  }
  const cleaned = await git(["clean", "-ffdxq"], { cwd: dir });
  if ("error" in cleaned) return cleaned;
  const head = await gitLine(["rev-parse", "HEAD"], { cwd: dir });
  if ("error" in head) return head;
  if (head.ok !== commit)
    return err("checkout_failed", `the Verifiers' checkout ${dir} is at ${head.ok}, not at ${commit}`);
  return ok(dir);
}

/**
 * Rewinds the run's branch and the Solver's checkout to `commit` (a restore). What the checkout
 * held that is not in its head commit is committed first onto `keepRef`, so nothing is lost:
 * returns that ref, or null when there was nothing to keep.
 */
export async function rewindCheckout(
  repo: RepoRecord,
  runDir: string,
  commit: string,
  keepRef: string,
): Promise<Result<string | null>> {
  const dir = await ensureCheckout(repo, runDir);
  if ("error" in dir) return dir;
  const cwd = dir.ok;
  const kept = await keepWorkingState(cwd, commit, keepRef);
  if ("error" in kept) return kept;
  const reset = await git(["reset", "--quiet", "--hard", commit], { cwd });
  if ("error" in reset) return reset;
  const cleaned = await git(["clean", "-fdq"], { cwd });
  return "error" in cleaned ? cleaned : kept;
}

/**
 * Keeps what a rewind to `target` would drop (commits after it, uncommitted work) reachable from
 * `ref`, without moving the branch; nothing to drop: null.
 */
async function keepWorkingState(cwd: string, target: string, ref: string): Promise<Result<string | null>> {
  const added = await git(["add", "-A"], { cwd });
  if ("error" in added) return added;
  const tree = await gitLine(["write-tree"], { cwd });
  if ("error" in tree) return tree;
  const headTree = await gitLine(["rev-parse", "HEAD^{tree}"], { cwd });
  if ("error" in headTree) return headTree;
  const head = await gitLine(["rev-parse", "HEAD"], { cwd });
  if ("error" in head) return head;
  if (tree.ok === headTree.ok && head.ok === target) return ok(null);
  const kept =
    tree.ok === headTree.ok
      ? head
      : await gitLine(
          ["commit-tree", tree.ok, "-p", head.ok, "-m", "relay infty: the checkout's state before a restore"],
          { cwd },
        );
  if ("error" in kept) return kept;
  const set = await git(["update-ref", ref, kept.ok], { cwd });
  return "error" in set ? set : ok(ref);
}

/** The diff of the run's branch from its start to `to`, as `git diff --binary` prints it. */
export async function branchDiff(repo: RepoRecord, to: string, opts: { stat?: boolean } = {}): Promise<Result<string>> {
  const r = await git(
    ["diff", "--no-ext-diff", "--no-textconv", ...(opts.stat ? ["--stat"] : ["--binary"]), repo.start_commit, to],
    { cwd: repo.path },
  );
  return "error" in r ? r : ok(r.ok.stdout);
}
