/**
 * A fleet run's repository on the worker that starts it: a clone of what was submitted (a URL,
 * or a path this host can reach) under the runs root, at the submitted commit. The run then
 * works on the clone as `relay infty run -C` works on a user's repository: its own worktree and
 * branch inside the run store; `--push` sends the verified commit to the clone's origin, which
 * is what was submitted. The clone is made in a temporary folder and renamed into place, so a
 * worker that dies half-way leaves nothing a later claim would take for a clone; git copies the
 * objects (`--no-hardlinks`), so the runs root may be a network filesystem.
 */
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { err, ok, type Result } from "../../util/result.ts";
import { git } from "../repo/git-cli.ts";
import { fleetCloneDir } from "../repo/record.ts";

/** The clone of `source` at `commit` for run `runId`; one a previous claim finished is used as it is. */
export async function cloneForRun(
  runsRoot: string,
  runId: string,
  source: string,
  commit?: string,
): Promise<Result<string>> {
  const dir = fleetCloneDir(runsRoot, runId);
  if (existsSync(path.join(dir, ".git"))) return ok(dir);
  const parent = path.dirname(dir);
  await mkdir(parent, { recursive: true });
  const tmp = `${dir}.partial-${os.hostname()}-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  const fix = `: submit with a repository URL every worker can reach (relay infty submit -C ssh://… or https://…)`;
  const cloned = await git(["clone", "--quiet", "--no-hardlinks", source, tmp], { cwd: parent });
  if ("error" in cloned) {
    await rm(tmp, { recursive: true, force: true });
    return err("clone_failed", `cannot clone ${source} on ${os.hostname()}${fix}\n${cloned.error.message}`);
  }
  if (commit) {
    const at = await git(["checkout", "--quiet", "--detach", commit], { cwd: tmp });
    if ("error" in at) {
      await rm(tmp, { recursive: true, force: true });
      return err(
        "clone_failed",
        `the clone of ${source} has no commit ${commit} (it was submitted from there; was it rewritten?): ${at.error.message}`,
      );
    }
  }
  await rename(tmp, dir);
  return ok(dir);
}
