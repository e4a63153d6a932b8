/**
 * What run.json records of the repository a run works on, and where the run keeps its
 * checkouts. A run on a repository gets its own worktree of the user's repository, on a branch
 * of its own (`relay/<run-id>` by default), inside the run store; the user's working tree,
 * index, current branch and HEAD are never touched. The orchestrator commits the Solver's
 * checkout at each verification request and at delivery; Verifiers judge a second, clean
 * checkout of exactly the commit under review.
 */
import path from "node:path";
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";

const CommitSchema = lazySchema(() => z.string().regex(/^[0-9a-f]{40,64}$/, "a full commit id"));

export const RepoRecordSchema = lazySchema(() =>
  z.object({
    /** The user's repository: its top-level folder. */
    path: z.string(),
    /** Its git directory (shared by every worktree): read-only to every role, wherever it lies. */
    git_dir: z.string(),
    /** The run's branch in that repository. */
    branch: z.string(),
    /** The user's HEAD when the run started, and the branch it was on (null: detached). */
    base_commit: CommitSchema,
    base_branch: z.string().nullable(),
    /** The branch's first commit: the base, or a commit of the uncommitted changes (--include-uncommitted). */
    start_commit: CommitSchema,
    /** The newest commit the orchestrator made on the branch (the start commit until the first). */
    head_commit: CommitSchema,
    /** Push the verified commit to the branch of the same name on the repository's `origin` (--push). */
    push: z.boolean().optional(),
  }),
);
export type RepoRecord = z.infer<typeof RepoRecordSchema>;

/** The Solver's checkout (a worktree on the run's branch). */
export const checkoutDir = (runDir: string) => path.join(runDir, "checkout");

/** The Verifiers' checkout (a detached worktree at the commit under review). */
export const reviewDir = (runDir: string) => path.join(runDir, "review");

/** The diff of the branch against its start, written beside the Solver's deliverable. */
export const BRANCH_DIFF_FILE = "branch.diff";

/** The default branch of a run: `relay/<run-id>`. */
export const defaultBranch = (runId: string) => `relay/${runId}`;

/** The commit id as people read it (12 characters). */
export const shortCommit = (commit: string) => commit.slice(0, 12);

/** Where a fleet's workers clone the repositories of the runs they start, under the runs root (not a run id, so lists skip it). */
export const FLEET_REPOS_DIR = ".fleet-repos";

export const fleetCloneDir = (runsRoot: string, runId: string) => path.join(runsRoot, FLEET_REPOS_DIR, runId);

/** Whether `dir` is a clone made for a fleet run (its repository is then not the user's own). */
export function isFleetClone(dir: string): boolean {
  return path.basename(path.dirname(path.resolve(dir))) === FLEET_REPOS_DIR;
}
