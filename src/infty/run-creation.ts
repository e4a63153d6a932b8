/**
 * How a run comes to exist: it is built in a hidden staging folder (run.json, the folders,
 * index/README.md) and renamed into place, so it exists whole or not at all; a creation a crash
 * interrupted is finished (or cleaned up, saying what was lost) by `relay infty resume`.
 */

import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { makePrivateDirs } from "../rollout/writer.ts";
import { err, ok, type Result } from "../util/result.ts";
import { fsyncDir, writeFileAtomic, writeJsonAtomic } from "./durable.ts";
import { type Pending, RUN_DIRS, type RunMeta, validMeta } from "./run-format.ts";

/** Where `relay infty run` builds a run before renaming it into place; never a valid run id. */
export const stagingDir = (root: string, runId: string) => path.join(root, `.creating-${runId}`);

export type CreateInit = Pick<
  RunMeta,
  | "run_id"
  | "objective"
  | "verifiers"
  | "consensus"
  | "max_turns"
  | "max_wall_ms"
  | "settings"
  | "role_timeout_ms"
  | "repo"
> &
  Partial<Pick<RunMeta, "max_tokens" | "prompt_only_roles">>;

/** The first index/README.md of a run; the Solver keeps it from then on. */
const INDEX_README_START =
  "# Index of this run\n\n(The Solver keeps this file: what each artifact is, which claim covers it, where things stand.)\n";

const startOver = (runId: string) => `relay infty run --run-id ${runId} "<objective>"`;

/** Files (not folders) under `dir`, to tell an empty leftover from one holding work. */
async function hasFiles(dir: string): Promise<boolean> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isFile() || (e.isDirectory() && (await hasFiles(path.join(dir, e.name))))) return true;
  }
  return false;
}

/**
 * index/README.md exists from the start: it is a writable root of the Solver's sandbox, and
 * a root must exist (a run from before keeps the one it has, or gets this one on resume).
 */
export async function ensureIndexReadme(dir: string): Promise<void> {
  const file = path.join(dir, "index", "README.md");
  if (existsSync(file)) return;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, INDEX_README_START);
}

/** A new run in `root` (a home's infty/ folder): staged, then renamed into place, so it exists whole or not at all. */
export async function createRun(
  root: string,
  init: CreateInit,
  pending: Pending | null,
): Promise<Result<{ dir: string; meta: RunMeta }>> {
  const dir = path.join(root, init.run_id);
  if (existsSync(path.join(dir, "run.json")))
    return err(
      "run_exists",
      `run ${init.run_id} already exists at ${dir}; resume it with: relay infty resume ${init.run_id}`,
    );
  // A folder without run.json is what a creation stopped by a crash leaves (or older relays did).
  if (existsSync(dir)) {
    if (await hasFiles(dir))
      return err(
        "run_exists",
        `${dir} exists without a run.json but holds files; move it away or pick another --run-id`,
      );
    await rm(dir, { recursive: true, force: true });
  }
  const now = new Date().toISOString();
  const meta: RunMeta = {
    max_tokens: null,
    operator_notes_delivered: 0,
    prompt_only_roles: [],
    ...init,
    created_at: now,
    updated_at: now,
    heartbeat_at: now,
    status: "running",
    status_detail: "",
    roles: [],
    turns: 0,
    wall_ms_used: 0,
    pending,
    inflight: null,
    handoffs: 0,
    deliverable: null,
    last_checkpoint: null,
    verified_at: null,
    next_note: 1,
    tokens_used: 0,
    activity: [],
  };
  validMeta(meta);
  const staging = stagingDir(root, init.run_id);
  await rm(staging, { recursive: true, force: true });
  // Owner-only, as rollouts are: a run holds the roles' conversations and the user's code.
  await makePrivateDirs(root, staging);
  await writeJsonAtomic(path.join(staging, "run.json"), meta);
  const placed = await place(staging, dir);
  if ("error" in placed) return placed;
  return ok({ dir, meta });
}

/** Second half of a creation: the folders, then the rename that makes the run exist. */
async function place(staging: string, dir: string): Promise<Result<void>> {
  for (const d of RUN_DIRS) await mkdir(path.join(staging, d), { recursive: true });
  await ensureIndexReadme(staging);
  try {
    await rename(staging, dir);
  } catch (e) {
    return err(
      "run_exists",
      `run ${path.basename(dir)} was created by another process meanwhile (${(e as Error).message}); resume it with: relay infty resume ${path.basename(dir)}`,
    );
  }
  await fsyncDir(path.dirname(dir));
  return ok(undefined);
}

/**
 * Finishes a creation that a crash interrupted after run.json was written; otherwise says what
 * was lost and how to start over. Only `relay infty resume` calls it (other commands only read).
 */
export async function recoverCreation(root: string, runId: string): Promise<Result<"recovered">> {
  const dir = path.join(root, runId);
  const staging = stagingDir(root, runId);
  if (existsSync(path.join(staging, "run.json"))) {
    if (existsSync(dir) && !(await hasFiles(dir))) await rm(dir, { recursive: true, force: true });
    const placed = await place(staging, dir);
    return "error" in placed ? placed : ok("recovered");
  }
  const leftover = existsSync(staging) ? staging : existsSync(dir) && !(await hasFiles(dir)) ? dir : undefined;
  if (leftover) {
    await rm(leftover, { recursive: true, force: true });
    return err(
      "run_not_created",
      `run ${runId} was never created: relay stopped before it saved the run's state, so nothing of it ran; only an empty folder was left (now removed). Start over with: ${startOver(runId)}`,
    );
  }
  return err("run_not_found", notFound(root, runId));
}

/** Why `runId` is not in `root`, and how to start it. */
export function notFound(root: string, runId: string): string {
  return `no run ${runId} under ${root} (a run stopped before it was created leaves none: start it with ${startOver(runId)}); list runs with: relay infty list`;
}
