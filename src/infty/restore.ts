/**
 * `relay infty restore`: rewinds a stopped run to a checkpoint. The four folders get the
 * checkpoint's files, run.json its state (pending step, turns, verified_at, deliverable, ...;
 * nothing in flight), and each role's rollout is cut to the size it had then, the cut-off rest
 * kept beside it in `<rollout>.after-<checkpoint>.jsonl`. `relay infty resume` goes on from there.
 *
 * Crash safety: a restore first writes restore-intent.json (which checkpoint, which commit, the
 * rollout sizes and the side files' names), then does steps that are each idempotent, then
 * removes the intent. A restore a crash cut short is finished, from the intent, by the next
 * `relay infty restore` or `relay infty resume` of the run before anything else.
 */

import { Buffer } from "node:buffer";
import { existsSync } from "node:fs";
import { open, readFile, rm, stat, truncate } from "node:fs/promises";
import path from "node:path";
import { parseJsonWith } from "../util/json.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import {
  CHECKPOINT_DIRS,
  type CheckpointRecord,
  RESTORE_INTENT_FILE,
  type RestoreIntent,
  RestoreIntentSchema,
} from "./checkpoint-format.ts";
import { materializeTree } from "./checkpoint-tree.ts";
import {
  type Checkpoint,
  findCheckpoint,
  forgetRollout,
  gitdirOf,
  listCheckpoints,
  readCheckpoint,
} from "./checkpoints.ts";
import { fsyncDir, writeFileAtomic, writeJsonAtomic } from "./durable.ts";
import { loadGit } from "./git-store.ts";
import { FileLease } from "./lease-file.ts";
import { runLiveness, stopFirst } from "./liveness.ts";
import { rewindCheckout } from "./repo/checkout.ts";
import type { RunStore } from "./run-store.ts";

export interface RestoreOutcome {
  checkpoint: Checkpoint;
  /** Per role: the size it was cut to, the size before, and where the rest went (if anything was cut). */
  rollouts: Array<{ role: string; path: string; bytes: number; before: number; side_file?: string }>;
  /** A run on a repository: the commit its branch went back to, and the ref that keeps what the checkout held. */
  repo?: { branch: string; commit: string; kept_at?: string };
}

const intentFile = (store: RunStore) => path.join(store.dir, RESTORE_INTENT_FILE);

/** A side file name no earlier restore used: `<rollout>.after-<id>.jsonl`, else `-2`, `-3`, ... */
function freshSideFile(rollout: string, id: string): string {
  const base = rollout.replace(/\.jsonl$/, "");
  for (let n = 1; ; n++) {
    const name = `${base}.after-${id}${n > 1 ? `-${n}` : ""}.jsonl`;
    if (!existsSync(name)) return name;
  }
}

async function readIntent(store: RunStore): Promise<Result<RestoreIntent | undefined>> {
  const text = await readFile(intentFile(store), "utf8").catch(() => undefined);
  if (text === undefined) return ok(undefined);
  return parseJsonWith(RestoreIntentSchema, text, intentFile(store), {
    code: "restore_intent_invalid",
    invalid: "is not a restore intent",
    note: "move it away to discard the interrupted restore",
  });
}

/** Keeps the rollout's bytes after `bytes` in `side`, then cuts the file there (again: a no-op). */
async function cutRollout(file: string, bytes: number, side: string): Promise<{ before: number; cut: boolean }> {
  const size = (await stat(file)).size;
  if (size < bytes) throw new Error(`${file} is ${size} bytes, shorter than the ${bytes} it had at the checkpoint`);
  if (size === bytes) return { before: size, cut: existsSync(side) };
  const fh = await open(file, "r");
  const rest = Buffer.alloc(size - bytes);
  try {
    await fh.read(rest, 0, rest.length, bytes);
  } finally {
    await fh.close();
  }
  await writeFileAtomic(side, rest, { mode: 0o600 });
  await truncate(file, bytes);
  const w = await open(file, "r+");
  await w.sync().finally(() => w.close());
  return { before: size, cut: true };
}

/** Drives an intent to its end: rollouts, folders, run.json, then the intent goes. */
async function applyIntent(store: RunStore, intent: RestoreIntent, c: Checkpoint): Promise<Result<RestoreOutcome>> {
  const read = await readCheckpoint(store.dir, c);
  if ("error" in read) return read;
  try {
    const rollouts: RestoreOutcome["rollouts"] = [];
    for (const r of intent.rollouts) {
      const { before, cut } = await cutRollout(r.path, r.bytes, r.side_file);
      forgetRollout(r.path);
      rollouts.push({ role: r.role, path: r.path, bytes: r.bytes, before, ...(cut ? { side_file: r.side_file } : {}) });
    }
    const git = await loadGit();
    for (const d of CHECKPOINT_DIRS)
      await materializeTree(git, gitdirOf(store.dir), read.ok.trees.get(d), path.join(store.dir, d));
    const repo = await rewindRepo(store, intent);
    if (repo && "error" in repo) throw new Error(repo.error.message);
    await store.update(restoredState(store, read.ok.record, intent));
    await store.log({
      type: "restored",
      checkpoint: c.id,
      commit: c.commit,
      side_files: rollouts.flatMap((r) => (r.side_file ? [r.side_file] : [])),
    });
    await rm(intentFile(store), { force: true });
    await fsyncDir(store.dir);
    return ok({ checkpoint: c, rollouts, ...(repo ? { repo: repo.ok } : {}) });
  } catch (e) {
    return err(
      "restore_failed",
      `restoring run ${store.id} to ${c.id} stopped: ${errorMessage(e)}; the intent is kept in ${intentFile(store)}, so running the same restore again (or relay infty resume ${store.id}) finishes it`,
    );
  }
}

/** The run's branch and checkout back at the checkpoint's commit (what they held kept on a ref); no repository: undefined. */
async function rewindRepo(
  store: RunStore,
  intent: RestoreIntent,
): Promise<Result<NonNullable<RestoreOutcome["repo"]>> | undefined> {
  const repo = store.state.repo;
  if (!repo || !intent.repo) return undefined;
  const kept = await rewindCheckout(repo, store.dir, intent.repo.commit, intent.repo.keep_ref);
  if ("error" in kept) return kept;
  return ok({ branch: repo.branch, commit: intent.repo.commit, ...(kept.ok ? { kept_at: kept.ok } : {}) });
}

function restoredState(store: RunStore, rec: CheckpointRecord, intent: RestoreIntent): Partial<RunStore["state"]> {
  const done = rec.state.deliverable !== null;
  const detail = `restored to ${rec.id} (turn ${rec.turn}, after: ${rec.summary.slice(0, 120)}); continue with: relay infty resume ${store.id}`;
  const repo =
    store.state.repo && intent.repo ? { repo: { ...store.state.repo, head_commit: intent.repo.commit } } : {};
  return {
    ...rec.state,
    ...repo,
    roles: restoredRoles(store, rec),
    inflight: null,
    last_checkpoint: rec.id,
    status: done ? "complete" : "interrupted",
    status_detail: done ? rec.state.status_detail : detail,
  };
}

/**
 * Each role's session as it was at the checkpoint: a Verifier replaced by a fresh session since
 * then goes back to the session it had (the later one's rollout is left where it is, unused).
 */
function restoredRoles(store: RunStore, rec: CheckpointRecord): RunStore["state"]["roles"] {
  const now = new Map(store.state.roles.map((r) => [r.role, r]));
  return rec.rollouts.map((r) => {
    const same = now.get(r.role);
    return same?.rollout_path === r.path ? same : { role: r.role, rollout_path: r.path };
  });
}

/** Finishes a restore a crash interrupted; nothing to do: undefined. */
export async function finishInterruptedRestore(store: RunStore): Promise<Result<RestoreOutcome | undefined>> {
  const intent = await readIntent(store);
  if ("error" in intent) return intent;
  if (!intent.ok) return ok(undefined);
  const all = await listCheckpoints(store.dir);
  if ("error" in all) return all;
  const c = all.ok.find((x) => x.commit === intent.ok!.commit);
  if (!c)
    return err(
      "restore_intent_invalid",
      `${intentFile(store)} names commit ${intent.ok.commit}, which is not a checkpoint of run ${store.id}; move the file away to discard that restore`,
    );
  return applyIntent(store, intent.ok, c);
}

/** The intent for restoring to `c`: rollout sizes from its record, side file names chosen now. */
async function planIntent(store: RunStore, c: Checkpoint): Promise<Result<RestoreIntent>> {
  const read = await readCheckpoint(store.dir, c);
  if ("error" in read) return read;
  const rollouts: RestoreIntent["rollouts"] = [];
  for (const r of read.ok.record.rollouts) {
    const size = (await stat(r.path).catch(() => undefined))?.size;
    if (size === undefined)
      return err("restore_impossible", `the ${r.role}'s rollout ${r.path} is gone; ${c.id} cannot be restored`);
    if (size < r.bytes)
      return err(
        "restore_impossible",
        `the ${r.role}'s rollout is ${size} bytes, shorter than the ${r.bytes} it had at ${c.id} (an earlier restore cut it; its rest is in a side file next to it): ${c.id} cannot be restored`,
      );
    rollouts.push({ ...r, side_file: freshSideFile(r.path, c.id) });
  }
  const started = new Date().toISOString();
  // The ref name is chosen now, so a restore finished after a crash keeps the same one.
  const repo =
    store.state.repo && c.repo_commit
      ? {
          repo: {
            commit: c.repo_commit,
            keep_ref: `refs/relay-infty/${store.id}/before-restore-${started.replace(/[-:.]/g, "")}`,
          },
        }
      : {};
  return ok({ version: 1, checkpoint: c.id, commit: c.commit, started_at: started, rollouts, ...repo });
}

/** Restores the stopped run in `store` to checkpoint `want` (see the top of this file). */
export async function restoreRun(store: RunStore, want: string): Promise<Result<RestoreOutcome>> {
  const live = await runLiveness(store.dir, store.state);
  if (live.live) return err("run_live", stopFirst(store.id, live, `relay infty restore ${store.id} ${want}`));
  // A restore changes the run: it holds the run's lease while it does, as a driver would.
  const grant = await new FileLease(store.dir, store.id).acquire(`relay infty restore ${store.id} ${want}`);
  if ("error" in grant) return grant;
  await store.fenceWith(grant.ok);
  try {
    return await restoreHeld(store, want);
  } finally {
    await grant.ok.release();
  }
}

async function restoreHeld(store: RunStore, want: string): Promise<Result<RestoreOutcome>> {
  const unfinished = await finishInterruptedRestore(store);
  if ("error" in unfinished) return unfinished;
  const c = await findCheckpoint(store.dir, store.id, want);
  if ("error" in c) return c;
  const intent = await planIntent(store, c.ok);
  if ("error" in intent) return intent;
  await writeJsonAtomic(intentFile(store), intent.ok);
  return applyIntent(store, intent.ok, c.ok);
}
