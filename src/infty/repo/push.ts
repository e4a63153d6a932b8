/**
 * `--push`: once a run on a repository delivers, its verified commit goes to the branch of the
 * same name on the repository's `origin` remote, with the user's own credentials (their ssh
 * agent, credential helper, GIT_SSH_COMMAND). Pushing the same commit again is a no-op, so a
 * resumed run that had delivered pushes again safely. Never a force push: a branch someone moved
 * on the remote is refused and left as it is.
 */
import { err, ok, type Result } from "../../util/result.ts";
import { git, gitLine } from "./git-cli.ts";
import { type RepoRecord, shortCommit } from "./record.ts";

/** The remote a run pushes to. */
export const PUSH_REMOTE = "origin";

/** How git reaches a remote for the user; the rest of GIT_* stays out (see git-cli.ts). */
const TRANSPORT_ENV = ["GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "SSH_ASKPASS"];

function transportEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of TRANSPORT_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  return env;
}

/** The URL of `origin` in the repository at `top`; refused (before a run starts) when it has none. */
export async function pushRemote(top: string): Promise<Result<string>> {
  const url = await git(["remote", "get-url", PUSH_REMOTE], { cwd: top, okCodes: [2, 128] });
  if ("error" in url) return url;
  if (url.ok.code !== 0)
    return err(
      "no_remote",
      `--push sends the verified commit to the repository's ${PUSH_REMOTE} remote, and ${top} has none; add it (git -C ${top} remote add ${PUSH_REMOTE} URL) or leave out --push. Nothing was started.`,
    );
  return ok(url.ok.stdout.trim());
}

export interface Pushed {
  remote: string;
  branch: string;
  commit: string;
}

/** Pushes `commit` to `repo.branch` on origin; the error says how to push it by hand. */
export async function pushBranch(repo: RepoRecord, commit: string): Promise<Result<Pushed>> {
  const remote = await pushRemote(repo.path);
  if ("error" in remote) return remote;
  const r = await git(["push", "--quiet", PUSH_REMOTE, `${commit}:refs/heads/${repo.branch}`], {
    cwd: repo.path,
    env: transportEnv(),
  });
  if ("error" in r)
    return err(
      "push_failed",
      `pushing ${shortCommit(commit)} to ${repo.branch} on ${remote.ok} failed: ${r.error.message}\nThe run's branch is intact; push it yourself: git -C ${repo.path} push ${PUSH_REMOTE} ${commit}:refs/heads/${repo.branch}`,
    );
  const there = await gitLine(["ls-remote", PUSH_REMOTE, `refs/heads/${repo.branch}`], {
    cwd: repo.path,
    env: transportEnv(),
  });
  if ("ok" in there && there.ok.split(/\s/)[0] !== commit)
    return err("push_failed", `after the push, ${repo.branch} on ${remote.ok} is not at ${shortCommit(commit)}`);
  return ok({ remote: remote.ok, branch: repo.branch, commit });
}
