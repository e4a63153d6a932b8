/**
 * `relay infty apply`: merges a run's verified commit into the branch the user's checkout is
 * on, only when asked. A fast-forward where possible, else a merge commit (as the user, with
 * their own identity); refused, changing nothing, when the user's tree has uncommitted changes
 * or the merge conflicts (it is aborted, and the conflicting files are named).
 */
import { err, ok, type Result } from "../../util/result.ts";
import type { RunMeta } from "../run-format.ts";
import { git, gitLine } from "./git-cli.ts";
import { type RepoRecord, shortCommit } from "./record.ts";

export interface ApplyOptions {
  /** Merge the branch's newest commit though the run has no verified delivery. */
  unverified?: boolean;
  /** Always make a merge commit (git merge --no-ff). */
  noFastForward?: boolean;
  /** The repository to merge into, when not the run's own (a fleet run's clone): the branch is fetched from the run's first. */
  into?: string;
}

export interface ApplyOutcome {
  commit: string;
  /** The user's branch the commit went into (null: a detached HEAD). */
  into: string | null;
  how: "fast-forward" | "merge commit" | "already merged";
  /** The user's HEAD afterwards. */
  head: string;
}

/** The commit `apply` merges: the verified delivery's, or (asked for) the branch's head. */
export function commitToApply(state: Readonly<RunMeta>, o: ApplyOptions): Result<{ repo: RepoRecord; commit: string }> {
  const repo = state.repo;
  if (!repo)
    return err(
      "no_repository",
      `run ${state.run_id} did not work on a repository (it ran in its run store only); its results are in its deliverable/ folder`,
    );
  if (state.deliverable?.commit) return ok({ repo, commit: state.deliverable.commit });
  if (o.unverified) return ok({ repo, commit: repo.head_commit });
  return err(
    "not_verified",
    `run ${state.run_id} has no verified delivery yet (status ${state.status}); its branch ${repo.branch} is at ${shortCommit(repo.head_commit)}, which no Verifier passed as a delivery. Resume it (relay infty resume ${state.run_id}), look at it (relay infty diff ${state.run_id}), or merge it anyway with --unverified`,
  );
}

async function conflictedFiles(top: string): Promise<string[]> {
  const r = await git(["diff", "--name-only", "--diff-filter=U"], { cwd: top });
  return "ok" in r ? r.ok.stdout.split("\n").filter(Boolean) : [];
}

export async function applyCommit(
  repo: RepoRecord,
  commit: string,
  runId: string,
  o: ApplyOptions,
): Promise<Result<ApplyOutcome>> {
  const top = o.into ?? repo.path;
  const dirty = await git(["status", "--porcelain=v1", "--untracked-files=no"], { cwd: top });
  if ("error" in dirty) return dirty;
  if (dirty.ok.stdout.trim()) {
    const files = dirty.ok.stdout
      .trim()
      .split("\n")
      .slice(0, 5)
      .map((l) => `  ${l}`)
      .join("\n");
    return err(
      "repo_dirty",
      `the working tree of ${top} has uncommitted changes:\n${files}\nCommit or stash them (git stash), then run: relay infty apply ${runId}. Nothing was merged.`,
    );
  }
  if (top !== repo.path) {
    // Only objects are added (FETCH_HEAD aside): no ref of the target changes before the merge.
    const fetched = await git(["fetch", "--quiet", "--no-tags", repo.path, `refs/heads/${repo.branch}`], { cwd: top });
    if ("error" in fetched) return fetched;
  }
  const branch = await git(["symbolic-ref", "--quiet", "--short", "HEAD"], { cwd: top, okCodes: [1] });
  if ("error" in branch) return branch;
  const into = branch.ok.code === 0 ? branch.ok.stdout.trim() : null;
  const before = await gitLine(["rev-parse", "HEAD"], { cwd: top });
  if ("error" in before) return before;
  const merged = await git(["merge-base", "--is-ancestor", commit, "HEAD"], { cwd: top, okCodes: [1] });
  if ("error" in merged) return merged;
  if (merged.ok.code === 0) return ok({ commit, into, how: "already merged", head: before.ok });
  const message = `Merge relay infty run ${runId} (${repo.branch} at ${shortCommit(commit)})`;
  const r = await git(["merge", "--no-edit", ...(o.noFastForward ? ["--no-ff"] : []), "-m", message, commit], {
    cwd: top,
    asUser: true,
  });
  if ("error" in r) {
    const conflicts = await conflictedFiles(top);
    await git(["merge", "--abort"], { cwd: top });
    const named = conflicts.length
      ? ` in ${conflicts.slice(0, 10).join(", ")}${conflicts.length > 10 ? ", …" : ""}`
      : "";
    return err(
      "merge_failed",
      `merging ${repo.branch} (${shortCommit(commit)}) into ${into ?? "the detached HEAD"} failed${named}, so it was aborted and nothing changed: ${r.error.message}\nMerge it yourself to resolve the conflicts: git -C ${top} merge ${repo.branch}`,
    );
  }
  const after = await gitLine(["rev-parse", "HEAD"], { cwd: top });
  if ("error" in after) return after;
  return ok({ commit, into, how: after.ok === commit ? "fast-forward" : "merge commit", head: after.ok });
}
