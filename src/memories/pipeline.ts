/** One `relay memories consolidate` run: prune, phase 1, phase 2; returns a report value. */

import type { MemorySettings } from "../config/memories.ts";
import { Log } from "../util/log.ts";
import type { Result } from "../util/result.ts";
import { ok } from "../util/result.ts";
import type { Consolidator } from "./consolidate.ts";
import type { Extractor } from "./extract.ts";
import { holderName, holderSince, newWorkerId } from "./holder.ts";
import { type Phase1Report, runPhase1 } from "./phase1.ts";
import { type Phase2Report, runPhase2 } from "./phase2.ts";
import { skipSummary } from "./skips.ts";
import type { StateDb } from "./store/db.ts";
import { pruneStage1 } from "./store/outputs.ts";

export const PRUNE_BATCH = 200;

export interface ConsolidateOptions {
  state: StateDb;
  relayHome: string;
  memoriesRoot: string;
  codexHome?: string;
  /** Session sources phase 1 reads; default `settings.sources`, else cli + vscode (rollout/sources.ts). */
  sources?: readonly string[];
  settings: MemorySettings;
  extractor: Extractor;
  consolidator: Consolidator;
  skipPhase1?: boolean;
  /** Extraction only (e.g. the hosts of a shared Postgres DB that do not hold the memory folder). */
  skipPhase2?: boolean;
  /** Phase 1 claims of this run; default `settings.max_rollouts_per_run`. */
  maxClaims?: number;
  /** A session that is running now (the start-up pass's own): never claimed. */
  excludeThreadId?: string;
  now?: () => number;
  workerId?: string;
  signal?: AbortSignal;
}

const log = Log.create("memories");

export interface ConsolidateReport {
  pruned: number;
  phase1?: Phase1Report;
  /** Absent with `skipPhase2`. */
  phase2?: Phase2Report;
}

export async function consolidateMemories(o: ConsolidateOptions): Promise<Result<ConsolidateReport>> {
  log.info("consolidation started", { phase1: !o.skipPhase1, phase2: !o.skipPhase2 });
  const r = await consolidate(o);
  if ("error" in r) log.warn("consolidation failed", { code: r.error.code, message: r.error.message });
  else log.info("consolidation ended", { summary: summaryLine(r.ok) });
  return r;
}

async function consolidate(o: ConsolidateOptions): Promise<Result<ConsolidateReport>> {
  const now = o.now ?? Date.now;
  const workerId = o.workerId ?? newWorkerId();
  const s = o.settings;
  const pruned = await pruneStage1(o.state, s.max_unused_days, PRUNE_BATCH, Math.floor(now() / 1000));
  if ("error" in pruned) return pruned;
  let phase1: Phase1Report | undefined;
  if (!o.skipPhase1) {
    const p1 = await runPhase1({
      state: o.state,
      relayHome: o.relayHome,
      codexHome: o.codexHome,
      sources: o.sources ?? s.sources,
      extractor: o.extractor,
      workerId,
      now,
      maxAgeDays: s.max_rollout_age_days,
      minIdleHours: s.min_rollout_idle_hours,
      maxClaims: o.maxClaims ?? s.max_rollouts_per_run,
      excludeThreadId: o.excludeThreadId,
      maxRunningJobs: s.max_running_jobs,
      concurrency: s.extract_concurrency,
      signal: o.signal,
    });
    if ("error" in p1) return p1;
    phase1 = p1.ok;
  }
  if (o.skipPhase2) return ok({ pruned: pruned.ok, phase1 });
  const p2 = await runPhase2({
    state: o.state,
    root: o.memoriesRoot,
    consolidator: o.consolidator,
    workerId,
    now,
    maxRawMemories: s.max_raw_memories_for_consolidation,
    maxUnusedDays: s.max_unused_days,
    cooldownSeconds: s.phase2_cooldown_seconds,
    signal: o.signal,
  });
  if ("error" in p2) return p2;
  return ok({ pruned: pruned.ok, phase1, phase2: p2.ok });
}

/**
 * `phase1 scanned=3 claimed=2 ok=1 no_output=1 failed=0; phase2 consolidated 5 memories, 3
 * file(s) changed`: phase 1 as counts, phase 2 in words (--json has the status codes).
 */
export function summaryLine(r: ConsolidateReport): string {
  const parts: string[] = [];
  if (r.phase1) {
    const c = (st: string) => r.phase1!.outcomes.filter((x) => x.status === st).length;
    const skipped = skipSummary(r.phase1.skipped);
    parts.push(
      `phase1 scanned=${r.phase1.scanned} claimed=${r.phase1.claimed} ok=${c("succeeded")} no_output=${c("succeeded_no_output")} failed=${c("failed")}${skipped ? ` ${skipped}` : ""}`,
    );
  } else parts.push("phase1 skipped");
  parts.push(r.phase2 ? `phase2 ${phase2Words(r.phase2)}` : "phase2 skipped");
  if (r.phase2?.rebuilt_baseline)
    parts.push(
      `the memory baseline was unreadable (${r.phase2.rebuilt_baseline}): made it again from the folder's files`,
    );
  if (r.pruned) parts.push(`pruned=${r.pruned}`);
  const hint = tooRecentHint(r);
  if (hint) parts.push(hint);
  return parts.join("; ");
}

/** Phase 2's outcome as a sentence a person reads in a cron log. */
function phase2Words(p: NonNullable<ConsolidateReport["phase2"]>): string {
  const files = `${p.changes.length} file${p.changes.length === 1 ? "" : "s"} changed`;
  const memories = `${p.inputs} ${p.inputs === 1 ? "memory" : "memories"}`;
  switch (p.status) {
    case "succeeded":
      return `consolidated ${memories}, ${files}`;
    case "succeeded_no_workspace_changes":
      return "nothing new to consolidate (no file changed since the last baseline)";
    case "succeeded_nothing_to_consolidate":
      return p.changes.length > 0
        ? "nothing new to consolidate; wrote the empty baseline"
        : "nothing new to consolidate";
    case "skipped_running":
      return `skipped: another run holds the lock${p.holder ? ` (held by ${holderName(p.holder)} ${holderSince(p.holder)})` : ""}`;
    case "skipped_cooldown":
      return "skipped: consolidated a short while ago (cooldown)";
    case "skipped_retry_unavailable":
      return "skipped: waiting to retry after a failure";
    case "failed":
      return `failed${p.detail ? ` (${p.detail.split("\n")[0]})` : ""}`;
  }
}

/** When every session was too recent: how to take them now. */
function tooRecentHint(r: ConsolidateReport): string | undefined {
  const recent = r.phase1?.skipped.by_reason.too_recent ?? 0;
  if (!r.phase1 || recent === 0 || r.phase1.claimed > 0) return undefined;
  return `${recent} session${recent === 1 ? " is" : "s are"} too recent to extract yet; to take ${recent === 1 ? "it" : "them"} now: relay memories consolidate --min-idle-hours 0`;
}

/**
 * One line per lease this run took over from a dead holder, and per live holder whose claims it
 * left alone (phase 1; a held phase-2 lock is named in the summary line).
 */
export function leaseLines(r: ConsolidateReport): string[] {
  const lines: string[] = [];
  const t = r.phase2?.takeover;
  if (t)
    lines.push(`took over the phase 2 lock from ${holderName(t.holder)} (held ${holderSince(t.holder)}): ${t.reason}`);
  const groups = new Map<string, { n: number; text: string }>();
  for (const x of r.phase1?.takeovers ?? []) {
    const key = `${x.holder.worker_id}\0${x.reason}`;
    const g = groups.get(key) ?? {
      n: 0,
      text: `from ${holderName(x.holder)} (held ${holderSince(x.holder)}): ${x.reason}`,
    };
    g.n++;
    groups.set(key, g);
  }
  for (const g of groups.values()) lines.push(`took over ${g.n} phase 1 claim${g.n === 1 ? "" : "s"} ${g.text}`);
  const held = new Map<string, { n: number; text: string }>();
  for (const x of r.phase1?.held ?? []) {
    const g = held.get(String(x.holder.worker_id)) ?? {
      n: 0,
      text: `${holderName(x.holder)} (${holderSince(x.holder)})`,
    };
    g.n++;
    held.set(String(x.holder.worker_id), g);
  }
  for (const g of held.values())
    lines.push(
      `left ${g.n} rollout${g.n === 1 ? "" : "s"} to ${g.text}, which is still extracting ${g.n === 1 ? "it" : "them"}`,
    );
  return lines;
}
