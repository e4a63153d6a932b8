/**
 * Checkpoints of a run: after each handoff (and so after each passing verification) the four
 * folders of the run store, the part of run.json a rewind needs and each role's rollout size
 * are committed to a git repository inside the run, `<run>/.checkpoints.git` (bare, one branch,
 * one commit per checkpoint). `relay infty restore` (restore.ts) rewinds a run to one of them.
 */

import { Buffer } from "node:buffer";
import { existsSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { ALL, type Changes } from "./change-feed.ts";
import {
  CHECKPOINT_DIRS,
  CHECKPOINT_GITDIR,
  CHECKPOINT_REF,
  type CheckpointInfo,
  CheckpointInfoSchema,
  type CheckpointRecord,
  CheckpointRecordSchema,
  type CheckpointTrigger,
  RECORD_FILE,
  RestorableStateSchema,
  type RolloutMark,
} from "./checkpoint-format.ts";
import { Snapshotter } from "./checkpoint-tree.ts";
import { appendLine, readJsonl, writeFileAtomic } from "./durable.ts";
import { type Git, gitFs, loadGit, readCache, syncObjects } from "./git-store.ts";
import type { RunStore } from "./run-store.ts";

const AUTHOR = { name: "relay infty", email: "infty@relay.invalid" };

export const gitdirOf = (runDir: string) => path.join(runDir, CHECKPOINT_GITDIR);

/** A checkpoint as listed: its info and its commit. */
export const CheckpointSchema = lazySchema(() =>
  CheckpointInfoSchema.extend({ commit: z.string().regex(/^[0-9a-f]{40}$/) }),
);
export type Checkpoint = z.infer<typeof CheckpointSchema>;

/**
 * The checkpoints in order, one JSON line each, appended once the branch points at each: a
 * listing (and a restore's look-up) reads it instead of every commit of a days-long history.
 * A crash between the branch's move and the append leaves it a line short: readers then read
 * the commits, and a driver's resume writes the list again (checkListed) before it appends.
 */
const listFile = (gitdir: string) => path.join(gitdir, "relay-checkpoints.jsonl");

/** Whether the list reaches the tip with no checkpoint missing (numbered 1, 2, 3, ...). */
const complete = (listed: Checkpoint[], tip: string) =>
  listed.at(-1)?.commit === tip && listed.every((c, i) => c.seq === i + 1);

/** Rewrites the checkpoint list from the commits if it does not reach the branch's tip (a driver's resume). */
export async function checkListed(runDir: string): Promise<void> {
  const gitdir = gitdirOf(runDir);
  const git = await loadGit();
  const tip = await head(git, gitdir);
  if (!tip) return;
  if (complete(await readJsonl(listFile(gitdir), CheckpointSchema), tip)) return;
  const all = await listCheckpoints(runDir);
  if ("ok" in all)
    await writeFileAtomic(
      listFile(gitdir),
      all.ok.map((c) => JSON.stringify(c)).join("\n") + (all.ok.length ? "\n" : ""),
    );
}

/** Bytes and lines of each rollout seen so far: a later count reads only what was appended. */
const counted = new Map<string, { bytes: number; lines: number }>();

/** After a restore cut `file`: its next count starts from the beginning. */
export function forgetRollout(file: string): void {
  counted.delete(file);
}

async function rolloutMark(role: string, file: string): Promise<RolloutMark> {
  const size = (await stat(file).catch(() => ({ size: 0 }))).size;
  const prior = counted.get(file);
  const from = prior && prior.bytes <= size ? prior : { bytes: 0, lines: 0 };
  let lines = from.lines;
  const fh = await open(file, "r").catch(() => undefined);
  if (fh) {
    try {
      const buf = Buffer.alloc(1 << 16);
      for (let at = from.bytes; at < size; ) {
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - at), at);
        if (bytesRead === 0) break;
        for (let i = 0; i < bytesRead; i++) if (buf[i] === 0x0a) lines++;
        at += bytesRead;
      }
    } finally {
      await fh.close();
    }
  }
  counted.set(file, { bytes: size, lines });
  return { role: role as RolloutMark["role"], path: file, bytes: size, lines };
}

function parseInfo(message: string): CheckpointInfo | undefined {
  const body = message.slice(message.indexOf("\n\n") + 2).trim();
  const parsed = parseJsonWith(CheckpointInfoSchema, body, "checkpoint commit message", { code: "checkpoint_invalid" });
  return "ok" in parsed ? parsed.ok : undefined;
}

async function head(git: Git, gitdir: string): Promise<string | undefined> {
  if (!existsSync(path.join(gitdir, "config"))) return undefined;
  return git.resolveRef({ fs: gitFs, gitdir, ref: CHECKPOINT_REF }).catch(() => undefined);
}

/**
 * What a checkpoint is taken with: the snapshotter a driver keeps between its checkpoints and
 * what changed since the last one (absent: a fresh one that looks at everything).
 */
export interface SnapshotContext {
  snapshotter: Snapshotter;
  changes: Changes;
}

const NOTHING_LEFT_OUT: ReadonlySet<string> = new Set();

/** The commit of a new checkpoint; the branch is moved to it last, so a crash before leaves no trace. */
async function commitCheckpoint(
  git: Git,
  store: RunStore,
  info: CheckpointInfo,
  parent: string | undefined,
  ctx: SnapshotContext,
): Promise<string> {
  const gitdir = gitdirOf(store.dir);
  const tree = [];
  for (const d of CHECKPOINT_DIRS)
    tree.push({
      mode: "040000",
      path: d,
      oid: await ctx.snapshotter.tree(store.dir, d, ctx.changes, NOTHING_LEFT_OUT),
      type: "tree" as const,
    });
  const rollouts: RolloutMark[] = [];
  for (const r of store.state.roles) if (r.rollout_path) rollouts.push(await rolloutMark(r.role, r.rollout_path));
  const record: CheckpointRecord = { version: 1, ...info, state: RestorableStateSchema.parse(store.state), rollouts };
  const recordOid = await git.writeBlob({
    fs: gitFs,
    gitdir,
    blob: Buffer.from(JSON.stringify(record, null, 2) + "\n"),
  });
  tree.push({ mode: "100644", path: RECORD_FILE, oid: recordOid, type: "blob" as const });
  const treeOid = await git.writeTree({ fs: gitFs, gitdir, tree });
  const when = { ...AUTHOR, timestamp: Math.floor(Date.parse(info.at) / 1000), timezoneOffset: 0 };
  const message = `${info.id} ${info.trigger}: ${info.summary.split("\n")[0]!.slice(0, 120)}\n\n${JSON.stringify(info)}\n`;
  const commit = await git.writeCommit({
    fs: gitFs,
    gitdir,
    commit: { message, tree: treeOid, parent: parent ? [parent] : [], author: when, committer: when },
  });
  await syncObjects();
  await git.writeRef({ fs: gitFs, gitdir, ref: CHECKPOINT_REF, value: commit, force: true });
  await appendLine(listFile(gitdir), JSON.stringify({ ...info, commit } satisfies Checkpoint));
  await ctx.snapshotter.save(ctx.changes.all);
  return commit;
}

/**
 * Creates the run's checkpoint repository if it is not there yet. Done before any role runs:
 * the sandbox keeps an existing `.checkpoints.git` read-only to the roles' commands, so none of
 * them can plant one of its own first.
 */
export async function initCheckpoints(runDir: string): Promise<void> {
  const gitdir = gitdirOf(runDir);
  if (existsSync(path.join(gitdir, "config"))) return;
  const git = await loadGit();
  await git.init({ fs: gitFs, gitdir, bare: true, defaultBranch: "checkpoints" });
}

/** Commits the run store as the next checkpoint and records its id in run.json. */
export async function takeCheckpoint(
  store: RunStore,
  trigger: CheckpointTrigger,
  summary: string,
  given?: SnapshotContext,
): Promise<Result<Checkpoint>> {
  try {
    const git = await loadGit();
    const gitdir = gitdirOf(store.dir);
    await initCheckpoints(store.dir);
    const ctx = given ?? { snapshotter: await Snapshotter.open(git, gitdir), changes: ALL };
    const parent = await head(git, gitdir);
    // The checkpoint before is known to a driver that took it: no read of a (packed) commit.
    const known = ctx.snapshotter.last?.commit === parent ? ctx.snapshotter.last : undefined;
    const prior =
      known ??
      (parent
        ? parseInfo((await git.readCommit({ fs: gitFs, gitdir, oid: parent, cache: readCache() })).commit.message)
        : undefined);
    const seq = (prior?.seq ?? 0) + 1;
    const st = store.state;
    const info: CheckpointInfo = {
      id: `ckpt-${String(seq).padStart(4, "0")}`,
      seq,
      at: new Date().toISOString(),
      trigger,
      summary,
      turn: st.turns,
      handoff: st.handoffs,
      ...(st.repo ? { repo_commit: st.repo.head_commit } : {}),
    };
    const commit = await commitCheckpoint(git, store, info, parent, ctx);
    ctx.snapshotter.last = { commit, seq };
    await store.update({ last_checkpoint: info.id });
    return ok({ ...info, commit });
  } catch (e) {
    return err(
      "checkpoint_failed",
      `could not commit a checkpoint of run ${store.id} in ${gitdirOf(store.dir)}: ${errorMessage(e)}`,
    );
  }
}

/** The newest checkpoint's info (none yet: undefined). */
export async function latestCheckpoint(runDir: string): Promise<CheckpointInfo | undefined> {
  const git = await loadGit();
  const gitdir = gitdirOf(runDir);
  const oid = await head(git, gitdir);
  return oid
    ? parseInfo((await git.readCommit({ fs: gitFs, gitdir, oid, cache: readCache() })).commit.message)
    : undefined;
}

/** Every checkpoint of the run in `runDir`, oldest first (none yet: empty). */
export async function listCheckpoints(runDir: string): Promise<Result<Checkpoint[]>> {
  try {
    const git = await loadGit();
    const gitdir = gitdirOf(runDir);
    const tip = await head(git, gitdir);
    if (!tip) return ok([]);
    // The list a driver appends to, when it reaches the branch's tip; else the commits themselves.
    const listed = await readJsonl(listFile(gitdir), CheckpointSchema);
    if (complete(listed, tip)) return ok(listed);
    const log = await git.log({ fs: gitFs, gitdir, ref: CHECKPOINT_REF, cache: readCache() });
    const out: Checkpoint[] = [];
    for (const c of log) {
      const info = parseInfo(c.commit.message);
      if (info) out.push({ ...info, commit: c.oid });
    }
    return ok(out.reverse());
  } catch (e) {
    return err("checkpoints_unreadable", `cannot read the checkpoints in ${gitdirOf(runDir)}: ${errorMessage(e)}`);
  }
}

/** A checkpoint by id (ckpt-0003, or 3) or by a commit prefix of 7+ hex digits. */
export async function findCheckpoint(runDir: string, runId: string, want: string): Promise<Result<Checkpoint>> {
  const all = await listCheckpoints(runDir);
  if ("error" in all) return all;
  const n = /^\d+$/.test(want) ? Number(want) : undefined;
  const hex = /^[0-9a-f]{7,40}$/.test(want) ? want : undefined;
  const found = all.ok.find((c) => c.id === want || c.seq === n || (hex !== undefined && c.commit.startsWith(hex)));
  if (found) return ok(found);
  const known = all.ok.length ? `it has ${all.ok.length} (${all.ok[0]!.id} … ${all.ok.at(-1)!.id})` : "it has none yet";
  return err(
    "unknown_checkpoint",
    `run ${runId} has no checkpoint ${JSON.stringify(want)}; ${known}; list them with: relay infty checkpoints ${runId}`,
  );
}

/** The record a checkpoint keeps (state, rollout sizes) and the trees of its folders. */
export async function readCheckpoint(
  runDir: string,
  c: Checkpoint,
): Promise<Result<{ record: CheckpointRecord; trees: Map<string, string> }>> {
  try {
    const git = await loadGit();
    const gitdir = gitdirOf(runDir);
    const { blob } = await git.readBlob({
      fs: gitFs,
      gitdir,
      oid: c.commit,
      filepath: RECORD_FILE,
      cache: readCache(),
    });
    const parsed = parseJsonWith(
      CheckpointRecordSchema,
      Buffer.from(blob).toString("utf8"),
      `${c.id}'s ${RECORD_FILE}`,
      { code: "checkpoint_invalid" },
    );
    if ("error" in parsed) return parsed;
    const { tree } = await git.readTree({ fs: gitFs, gitdir, oid: c.commit, cache: readCache() });
    return ok({ record: parsed.ok, trees: new Map(tree.filter((e) => e.type === "tree").map((e) => [e.path, e.oid])) });
  } catch (e) {
    return err("checkpoint_unreadable", `cannot read checkpoint ${c.id} in ${gitdirOf(runDir)}: ${errorMessage(e)}`);
  }
}
