/**
 * The repository side of `relay infty`: which repository a new run works on (`-C`, the
 * current directory's, or none with `--no-repo`), and `relay infty diff` / `relay infty apply`
 * for what a run did to it.
 */

import { existsSync } from "node:fs";
import path from "node:path";
import type { Command, OptionValues } from "@commander-js/extra-typings";
import { runLiveness } from "../../infty/liveness.ts";
import {
  applyCommit,
  branchDiff,
  commitToApply,
  findRepository,
  isFleetClone,
  type RepoRequest,
  shortCommit,
} from "../../infty/repo/index.ts";
import { ExitCode, fail } from "../usage.ts";
import { loadRun, RUN_ARG_HELP } from "./run-arg.ts";

export interface RepoFlags {
  /** A path (-C), or false (--no-repo). */
  repo?: string | false;
  branch?: string;
  includeUncommitted?: boolean;
  push?: boolean;
}

export function repoOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .option(
      "-C, --repo <dir>",
      "the git repository to work on (default: the one the current directory is in); the run gets its own checkout on its own branch, and your checkout is never touched",
    )
    .option("--no-repo", "work in the run store only, even inside a repository")
    .option("--branch <name>", "the run's branch in the repository (default: relay/<run-id>)")
    .option(
      "--include-uncommitted",
      "start the run's branch with a commit of your uncommitted changes instead of refusing a dirty tree (your tree stays as it is)",
    )
    .option(
      "--push",
      "once verified, push the run's commit to its branch on the repository's origin remote (never forced; checked before the run starts)",
    );
}

/** The folder at or above `dir` that holds `.git` (a folder, or a worktree's file). */
function repositoryAbove(dir: string): string | undefined {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (existsSync(path.join(d, ".git"))) return d;
    if (path.dirname(d) === d) return undefined;
  }
}

/** The repository a new run works on, or undefined for a run in the run store only. */
export function repoRequest(f: RepoFlags): RepoRequest | undefined {
  const given = typeof f.repo === "string" ? path.resolve(f.repo) : undefined;
  if (given && !existsSync(given)) fail(`-C ${f.repo}: no such folder`, ExitCode.Usage);
  const dir = f.repo === false ? undefined : (given ?? repositoryAbove(process.cwd()));
  if (!dir) {
    if (f.branch !== undefined || f.includeUncommitted || f.push)
      fail(
        `--branch, --include-uncommitted and --push need a repository: run inside one, or give it with -C <repo>${f.repo === false ? " (instead of --no-repo)" : ""}`,
        ExitCode.Usage,
      );
    return undefined;
  }
  return {
    dir,
    ...(f.branch !== undefined ? { branch: f.branch } : {}),
    ...(f.includeUncommitted ? { includeUncommitted: true } : {}),
    ...(f.push ? { push: true } : {}),
  };
}

/**
 * The repository `apply` merges into, when not the run's own: -C's, or (a fleet run, whose own
 * is a clone under the runs root) the current directory's.
 */
async function applyTarget(runRepo: string, flag: string | undefined, runId: string): Promise<string | undefined> {
  if (flag === undefined && !isFleetClone(runRepo)) return undefined;
  const found = await findRepository(path.resolve(flag ?? "."));
  if ("error" in found) fail(found.error.message, ExitCode.Usage);
  if (!found.ok)
    fail(
      flag !== undefined
        ? `-C ${flag}: not inside a git repository`
        : `run ${runId} worked on the fleet's clone ${runRepo}; run relay infty apply ${runId} inside the repository to merge into, or give it with -C <repo>`,
      ExitCode.Usage,
    );
  return found.ok.top === runRepo ? undefined : found.ok.top;
}

export function addDiff(infty: Command) {
  infty
    .command("diff")
    .description(
      "print what a run on a repository changed: its branch from its start to its newest commit (the verified one once delivered)",
    )
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--stat", "a summary of the changed files instead of the patch")
    .action(async (runId, opts) => {
      const store = await loadRun(runId);
      const got = commitToApply(store.state, { unverified: true });
      if ("error" in got) fail(got.error.message, ExitCode.Usage);
      const diff = await branchDiff(got.ok.repo, got.ok.commit, { stat: Boolean(opts.stat) });
      if ("error" in diff) fail(diff.error.message);
      process.stdout.write(diff.ok);
      if (!diff.ok)
        process.stderr.write(
          `run ${store.id}'s branch ${got.ok.repo.branch} has no changes yet (at ${shortCommit(got.ok.commit)})\n`,
        );
    });
}

export function addApply(infty: Command) {
  infty
    .command("apply")
    .description(
      "merge a run's verified commit into the branch your checkout is on (a fast-forward, else a merge commit); refused on a dirty tree or a conflict, changing nothing",
    )
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--no-ff", "always make a merge commit")
    .option("--unverified", "merge the branch's newest commit although no Verifier passed it as a delivery")
    .option(
      "-C, --repo <dir>",
      "merge into this repository instead of the run's own (its branch is fetched first); a fleet run's default is the one the current directory is in",
    )
    .option("--json", "print the outcome as JSON")
    .action(async (runId, opts) => {
      const store = await loadRun(runId);
      const live = await runLiveness(store.dir, store.state);
      if (live.live)
        fail(
          `run ${store.id} is being driven right now${live.pid ? ` (pid ${live.pid})` : ""}; let it finish or stop it (relay infty stop ${store.id}), then: relay infty apply ${store.id}`,
          ExitCode.Failure,
        );
      const got = commitToApply(store.state, { unverified: opts.unverified });
      if ("error" in got) fail(got.error.message, ExitCode.Failure);
      const into = await applyTarget(got.ok.repo.path, opts.repo, store.id);
      const r = await applyCommit(got.ok.repo, got.ok.commit, store.id, {
        noFastForward: opts.ff === false,
        ...(into ? { into } : {}),
      });
      if ("error" in r) fail(r.error.message, ExitCode.Failure);
      if (opts.json) {
        process.stdout.write(JSON.stringify({ run_id: store.id, branch: got.ok.repo.branch, ...r.ok }) + "\n");
        return;
      }
      const target = r.ok.into ?? "the detached HEAD";
      const line =
        r.ok.how === "already merged"
          ? `run ${store.id}'s commit ${shortCommit(r.ok.commit)} is already in ${target}; nothing to do`
          : `merged run ${store.id}'s commit ${shortCommit(r.ok.commit)} (${got.ok.repo.branch}) into ${target} in ${into ?? got.ok.repo.path}: ${r.ok.how}${r.ok.how === "merge commit" ? ` ${shortCommit(r.ok.head)}` : ""}`;
      process.stdout.write(`${line}\n`);
    });
}
