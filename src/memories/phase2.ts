/** Phase 2: under the global lock, sync inputs, diff against the baseline, consolidate, reset. */

import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { crashPoint } from "../util/crash-point.ts";
import { redactSecrets } from "../util/redact.ts";
import { errorMessage, ok, type Result } from "../util/result.ts";
import type { Consolidator } from "./consolidate.ts";
import { type HolderReport, LEASE_HEARTBEAT_SECONDS } from "./holder.ts";
import { DIFF_FILE, MEMORY_MD, MEMORY_SUMMARY, syncInputs } from "./storage.ts";
import type { StateDb } from "./store/db.ts";
import type { TakeOver, TakeOverJudge } from "./store/leases.ts";
import { selectPhase2Inputs } from "./store/outputs.ts";
import { heartbeatPhase2, markPhase2Failed, markPhase2Succeeded, tryClaimPhase2 } from "./store/phase2.ts";
import {
  type PreparedWorkspace,
  prepareWorkspace,
  resetBaseline,
  type WorkspaceChange,
  workspaceDiff,
  writeDiffFile,
} from "./workspace.ts";

export const PHASE2_LEASE_SECONDS = 3600;
export const PHASE2_RETRY_DELAY_SECONDS = 3600;
export const PHASE2_HEARTBEAT_MS = LEASE_HEARTBEAT_SECONDS * 1000;

export type Phase2Status =
  | "succeeded"
  | "succeeded_no_workspace_changes"
  /** No memories and no memory files yet: the baseline is set without running the consolidator. */
  | "succeeded_nothing_to_consolidate"
  | "skipped_running"
  | "skipped_cooldown"
  | "skipped_retry_unavailable"
  | "failed";

export interface Phase2Options {
  state: StateDb;
  root: string;
  consolidator: Consolidator;
  workerId: string;
  /** Epoch milliseconds. */
  now: () => number;
  maxRawMemories: number;
  maxUnusedDays: number;
  cooldownSeconds: number;
  leaseSeconds?: number;
  retryDelaySeconds?: number;
  heartbeatMs?: number;
  /** How a live lock of another worker is judged (default: holder gone or heartbeat stale). */
  takeOver?: TakeOverJudge;
  signal?: AbortSignal;
  /** Test hook: runs after the inputs are synced, before the agent (e.g. to simulate a crash). */
  afterSync?: () => Promise<void>;
}

export interface Phase2Report {
  status: Phase2Status;
  /** Failure label (`failed_*`) or the consolidator's one-line summary. */
  detail?: string;
  inputs: number;
  changes: WorkspaceChange[];
  watermark?: number;
  /** skipped_running: who holds the lock. */
  holder?: HolderReport;
  /** The lock was taken from a holder that is gone. */
  takeover?: TakeOver;
  /** The memory folder's baseline was unreadable and was made again from its files: why. */
  rebuilt_baseline?: string;
}

const secs = (ms: number) => Math.floor(ms / 1000);

export async function runPhase2(o: Phase2Options): Promise<Result<Phase2Report>> {
  const lease = o.leaseSeconds ?? PHASE2_LEASE_SECONDS;
  const claim = await tryClaimPhase2(o.state, {
    workerId: o.workerId,
    leaseSeconds: lease,
    cooldownSeconds: o.cooldownSeconds,
    now: secs(o.now()),
    takeOver: o.takeOver,
  });
  if ("error" in claim) return claim;
  if (claim.ok.kind === "skipped_running")
    return ok({ status: claim.ok.kind, inputs: 0, changes: [], holder: claim.ok.holder });
  if (claim.ok.kind !== "claimed") return ok({ status: claim.ok.kind, inputs: 0, changes: [] });
  const prep = await prepareWorkspace(o.root);
  const r = await consolidateUnderLock(o, claim.ok.token, claim.ok.inputWatermark, lease, prep);
  if ("error" in r) return r;
  const takeover = claim.ok.tookOver;
  const rebuilt = "ok" in prep ? prep.ok.rebuilt : undefined;
  return ok({ ...r.ok, ...(takeover ? { takeover } : {}), ...(rebuilt ? { rebuilt_baseline: rebuilt } : {}) });
}

/**
 * The consolidator's run, with the lock's heartbeat going meanwhile; `lock.lost` once a
 * heartbeat found the lock taken (or could not be written).
 */
async function consolidateWithHeartbeat(
  o: Phase2Options,
  token: string,
  lease: number,
  input: Parameters<Phase2Options["consolidator"]>[0],
) {
  // Read later: a heartbeat still in flight when the consolidator ends may yet find the lock lost.
  const lock = { lost: false };
  const beat = setInterval(() => {
    void heartbeatPhase2(o.state, token, lease, secs(o.now())).then((r) => {
      if ("error" in r || !r.ok) lock.lost = true;
    });
  }, o.heartbeatMs ?? PHASE2_HEARTBEAT_MS);
  let result: Awaited<ReturnType<Phase2Options["consolidator"]>>;
  try {
    result = await o.consolidator(input);
  } catch (e) {
    result = { error: { code: "failed_agent", message: errorMessage(e) } };
  } finally {
    clearInterval(beat);
  }
  return { result, lock };
}

async function consolidateUnderLock(
  o: Phase2Options,
  token: string,
  inputWatermark: number,
  lease: number,
  prep: Result<PreparedWorkspace>,
): Promise<Result<Phase2Report>> {
  const failed = (label: string, raw: string) => failPhase2(o, token, label, raw);

  if ("error" in prep) return failed("failed_prepare_workspace", prep.error.message);
  const sel = await selectPhase2Inputs(o.state, o.maxRawMemories, o.maxUnusedDays, secs(o.now()));
  if ("error" in sel) {
    await failed("failed_load_stage1_outputs", sel.error.message);
    return sel;
  }
  const selection = sel.ok;
  const watermark = Math.max(inputWatermark, ...selection.map((s) => s.source_updated_at));
  const refs = selection.map((s) => ({ threadId: s.thread_id, sourceUpdatedAt: s.source_updated_at }));
  try {
    await syncInputs(o.root, selection);
  } catch (e) {
    return failed("failed_sync_workspace_inputs", errorMessage(e));
  }
  if (o.afterSync) await o.afterSync();
  crashPoint("phase2:synced");
  const diff = await workspaceDiff(o.root);
  if ("error" in diff) return failed("failed_workspace_status", diff.error.message);
  if (!diff.ok.changes.length) {
    const done = await markPhase2Succeeded(o.state, token, watermark, refs, secs(o.now()));
    if ("error" in done) return done;
    return ok({ status: "succeeded_no_workspace_changes", inputs: selection.length, changes: [], watermark });
  }
  if (
    !selection.length &&
    !existsSync(path.join(o.root, MEMORY_MD)) &&
    !existsSync(path.join(o.root, MEMORY_SUMMARY))
  ) {
    const reset = await resetBaseline(o.root, new Date(o.now()));
    if ("error" in reset) return failed("failed_workspace_commit", reset.error.message);
    const done = await markPhase2Succeeded(o.state, token, watermark, refs, secs(o.now()));
    if ("error" in done) return done;
    return ok({ status: "succeeded_nothing_to_consolidate", inputs: 0, changes: diff.ok.changes, watermark });
  }
  const wrote = await writeDiffFile(o.root, diff.ok);
  if ("error" in wrote) return failed("failed_workspace_diff_file", wrote.error.message);
  crashPoint("phase2:diff-written");

  const { result, lock } = await consolidateWithHeartbeat(o, token, lease, {
    root: o.root,
    selection,
    diff: diff.ok,
    signal: o.signal,
  });
  if ("error" in result)
    return failed(result.error.code.startsWith("failed_") ? result.error.code : "failed_agent", result.error.message);
  crashPoint("phase2:consolidated");
  return finishConsolidation(o, token, lease, lock, {
    summary: result.ok.summary,
    inputs: selection.length,
    changes: diff.ok.changes,
    watermark,
    refs,
  });
}

/** A phase 2 failure, recorded on the job (retried later) and reported. */
async function failPhase2(o: Phase2Options, token: string, label: string, raw: string): Promise<Result<Phase2Report>> {
  // Agent failures quote model output; this lands in jobs.last_error and the report.
  const message = redactSecrets(raw);
  const m = await markPhase2Failed(
    o.state,
    token,
    `${label}: ${message}`,
    o.retryDelaySeconds ?? PHASE2_RETRY_DELAY_SECONDS,
    secs(o.now()),
  );
  const extra = "error" in m ? ` (recording the failure also failed: ${m.error.message})` : "";
  return ok({ status: "failed", detail: `${label}: ${message}${extra}`, inputs: 0, changes: [] });
}

interface Consolidated {
  summary: string;
  inputs: number;
  changes: Phase2Report["changes"];
  watermark: number;
  refs: Parameters<typeof markPhase2Succeeded>[3];
}

/** After the agent: the lock must still be this run's; then the new baseline, and the job succeeds. */
async function finishConsolidation(
  o: Phase2Options,
  token: string,
  lease: number,
  lock: { lost: boolean },
  c: Consolidated,
): Promise<Result<Phase2Report>> {
  const owned = await heartbeatPhase2(o.state, token, lease, secs(o.now()));
  if ("error" in owned) return failPhase2(o, token, "failed_confirm_ownership", owned.error.message);
  if (!owned.ok || lock.lost)
    return ok({
      status: "failed",
      detail: "failed_confirm_ownership: another run took the lock while this one was consolidating",
      inputs: c.inputs,
      changes: c.changes,
    });
  await rm(path.join(o.root, DIFF_FILE), { force: true });
  const reset = await resetBaseline(o.root, new Date(o.now()));
  if ("error" in reset) return failPhase2(o, token, "failed_workspace_commit", reset.error.message);
  const done = await markPhase2Succeeded(o.state, token, c.watermark, c.refs, secs(o.now()));
  if ("error" in done) return done;
  return ok({ status: "succeeded", detail: c.summary, inputs: c.inputs, changes: c.changes, watermark: c.watermark });
}
