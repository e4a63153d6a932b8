/** Phase 1: claim eligible rollouts, extract {raw_memory, rollout_summary, rollout_slug}, store. */
import os from "node:os";
import { setImmediate } from "node:timers";
import { DEFAULT_SOURCES } from "../rollout/sources.ts";
import { redactSecrets } from "../util/redact.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { type Eligible, selectCandidates } from "./eligibility.ts";
import { type Extractor, redactStage1 } from "./extract.ts";
import { hasUserTurn, readMemoryRollout } from "./filter.ts";
import { type HolderReport, LEASE_HEARTBEAT_SECONDS } from "./holder.ts";
import { scanRollouts } from "./scan.ts";
import { addSkip, type SkipReason, type SkipReport } from "./skips.ts";
import type { StateDb } from "./store/db.ts";
import type { TakeOver, TakeOverJudge } from "./store/leases.ts";
import type { ThreadRow } from "./store/rows.ts";
import {
  heartbeatStage1,
  markStage1Failed,
  markStage1NoOutput,
  markStage1Succeeded,
  type Stage1Claim,
  type Stage1Result,
  tryClaimStage1Batch,
} from "./store/stage1.ts";
import { getThreads } from "./store/threads.ts";

export const STAGE1_LEASE_SECONDS = 3600;
export const STAGE1_RETRY_DELAY_SECONDS = 3600;
export const STAGE1_SCAN_LIMIT = 5000;

export interface Phase1Options {
  state: StateDb;
  relayHome: string;
  codexHome?: string;
  extractor: Extractor;
  workerId: string;
  /** Epoch milliseconds. */
  now: () => number;
  maxAgeDays: number;
  minIdleHours: number;
  maxClaims: number;
  maxRunningJobs: number;
  concurrency: number;
  scanLimit?: number;
  leaseSeconds?: number;
  retryDelaySeconds?: number;
  /** Session sources read (default `DEFAULT_SOURCES`: cli, vscode). */
  sources?: readonly string[];
  excludeThreadId?: string;
  /** Default $RELAY_MEMORIES_HOST, else os.hostname(): threads other hosts scanned into a shared DB are not claimed here. */
  host?: string;
  /** How live claims of other workers are judged (default: holder gone or heartbeat stale). */
  takeOver?: TakeOverJudge;
  heartbeatMs?: number;
  signal?: AbortSignal;
  /** Called for each page of candidates once claimed, before its claims are extracted (tests). */
  onPage?: (page: { rows: number; claims: number }) => void;
}

export interface Phase1Outcome {
  threadId: string;
  /** `no_user_turn`: nothing a user asked, so no extractor call (also counted in `skipped`). */
  status: "succeeded" | "succeeded_no_output" | "no_user_turn" | "failed" | "lost_claim";
  error?: string;
  /** Lines of the rollout that were skipped (file:line and why); the rest was used. */
  warnings?: string[];
}

export interface Phase1Report {
  scanned: number;
  candidates: number;
  claimed: number;
  /** Rollouts left alone this run, by reason (`SkipReportSchema`). */
  skipped: SkipReport;
  outcomes: Phase1Outcome[];
  warnings: string[];
  /** Claims taken over from holders that are gone. */
  takeovers: Array<TakeOver & { thread_id: string }>;
  /** Rollouts skipped because a live worker is extracting them. */
  held: Array<{ thread_id: string; holder: HolderReport }>;
}

const secs = (ms: number) => Math.floor(ms / 1000);

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(Math.max(1, limit), items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return out;
}

/**
 * Scans, then claims and extracts a page of candidates at a time: what a run holds at once is a
 * page of rows and claims, plus a few fields per scanned rollout and the report's outcomes.
 */
export async function runPhase1(o: Phase1Options): Promise<Result<Phase1Report>> {
  const scanLimit = o.scanLimit ?? STAGE1_SCAN_LIMIT;
  const host = o.host ?? (process.env.RELAY_MEMORIES_HOST?.trim() || os.hostname());
  const scan = await scanRollouts(
    o.state,
    { relayHome: o.relayHome, codexHome: o.codexHome, scanLimit, host },
    scanned,
  );
  if ("error" in scan) return scan;
  const skipped = scan.ok.skipped;
  const rules = {
    nowMs: o.now(),
    maxAgeDays: o.maxAgeDays,
    minIdleHours: o.minIdleHours,
    sources: o.sources ?? DEFAULT_SOURCES,
    excludeThreadId: o.excludeThreadId,
  };
  const cands = selectCandidates(scan.ok.kept.values(), rules, scanLimit, skipped);
  scan.ok.kept.clear();
  const r = await withHeartbeat(o, () => claimAndExtract(o, cands, skipped));
  if ("error" in r) return r;
  const { claimed, outcomes, takeovers, held } = r.ok;
  addSkip(skipped, "no_user_turn", outcomes.filter((x) => x.status === "no_user_turn").length);
  if (skipped.by_reason.running_cap > 0) skipped.max_running_jobs = o.maxRunningJobs;
  const warnings = [...scan.ok.warnings, ...outcomes.flatMap((x) => x.warnings ?? [])];
  return ok({ scanned: scan.ok.seen, candidates: cands.length, claimed, skipped, outcomes, warnings, takeovers, held });
}

/** What phase 1 keeps of a scanned rollout until it is claimed (see `Keep`: the row only where the DB does not hold it). */
interface Scanned extends Eligible {
  row?: ThreadRow;
}

function scanned(t: ThreadRow, stored: boolean): Scanned {
  const s: Scanned = { id: t.id, source: t.source, memory_mode: t.memory_mode, updated_at_ms: t.updated_at_ms };
  if (!stored) s.row = t;
  return s;
}

interface Run {
  claimed: number;
  outcomes: Phase1Outcome[];
  takeovers: Phase1Report["takeovers"];
  held: Phase1Report["held"];
  /**
   * Claims of this run that have ended (stored, no output, failed). They still count as running
   * against `maxRunningJobs`, so each claim is decided as if every earlier claim of the run were
   * still being extracted, as when a run claimed everything before extracting.
   */
  ended: number;
}

type Claimed = { thread: ThreadRow; token: string };

/** Candidates claimed per transaction, then extracted before the next page is claimed. */
export const CLAIM_BATCH = 200;

/**
 * Claims candidates in order until `maxClaims`, a page per transaction (see
 * `tryClaimStage1Batch`), and extracts each page's claims before claiming the next.
 */
async function claimAndExtract(o: Phase1Options, cands: Scanned[], skipped: SkipReport): Promise<Result<Run>> {
  const run: Run = { claimed: 0, outcomes: [], takeovers: [], held: [], ended: 0 };
  let tried = 0;
  for (let i = 0; i < cands.length && run.claimed < o.maxClaims; i += CLAIM_BATCH) {
    const rows = await rowsOf(o.state, cands.slice(i, i + CLAIM_BATCH));
    if ("error" in rows) return rows;
    const c = await claimPage(o, rows.ok, run, skipped);
    if ("error" in c) return c;
    tried += c.ok.tried;
    await yieldToEventLoop();
    o.onPage?.({ rows: rows.ok.length, claims: c.ok.claims.length });
    const outcomes = await pool(c.ok.claims, o.concurrency, (x) => extractOne(o, run, x.thread, x.token));
    for (const x of outcomes) run.outcomes.push(x);
  }
  // Eligible, but this run's claims were used up first: the next run takes them.
  addSkip(skipped, "claim_limit", cands.length - tried);
  return ok(run);
}

/** The rows of a page of candidates: read back from the DB, or the one the scan kept. */
async function rowsOf(state: StateDb, page: Scanned[]): Promise<Result<ThreadRow[]>> {
  const got = await getThreads(
    state,
    page.filter((c) => !c.row).map((c) => c.id),
  );
  if ("error" in got) return got;
  const rows: ThreadRow[] = [];
  for (const c of page) {
    const row = c.row ?? got.ok.get(c.id);
    if (!row)
      return err(
        "db_error",
        `state DB ${state.location}: the memory_threads row of ${c.id} was deleted during phase 1`,
      );
    rows.push(row);
  }
  return ok(rows);
}

async function claimPage(
  o: Phase1Options,
  threads: ThreadRow[],
  run: Run,
  skipped: SkipReport,
): Promise<Result<{ claims: Claimed[]; tried: number }>> {
  const c = await tryClaimStage1Batch(o.state, {
    threads: threads.map((t) => ({ threadId: t.id, sourceUpdatedAt: secs(t.updated_at_ms) })),
    limit: o.maxClaims - run.claimed,
    workerId: o.workerId,
    leaseSeconds: o.leaseSeconds ?? STAGE1_LEASE_SECONDS,
    maxRunningJobs: o.maxRunningJobs,
    ended: run.ended,
    now: secs(o.now()),
    takeOver: o.takeOver,
  });
  if ("error" in c) return c;
  const claims: Claimed[] = [];
  c.ok.forEach((claim, k) => tally(run, claims, skipped, threads[k]!, claim));
  return ok({ claims, tried: c.ok.length });
}

const CLAIM_SKIP: Record<Exclude<Stage1Claim["kind"], "claimed">, SkipReason> = {
  skipped_up_to_date: "up_to_date",
  skipped_running: "running",
  skipped_cap: "running_cap",
  skipped_retry_backoff: "retry_backoff",
  skipped_retry_exhausted: "retry_exhausted",
};

function tally(run: Run, claims: Claimed[], skipped: SkipReport, thread: ThreadRow, c: Stage1Claim): void {
  if (c.kind === "claimed") {
    claims.push({ thread, token: c.token });
    run.claimed++;
    if (c.tookOver) run.takeovers.push({ thread_id: thread.id, ...c.tookOver });
  } else {
    addSkip(skipped, CLAIM_SKIP[c.kind]);
    if (c.kind === "skipped_running") run.held.push({ thread_id: thread.id, holder: c.holder });
  }
}

/** Keeps this worker's claims visibly alive while `fn` extracts (others take over stale ones). */
async function withHeartbeat<T>(o: Phase1Options, fn: () => Promise<T>): Promise<T> {
  const lease = o.leaseSeconds ?? STAGE1_LEASE_SECONDS;
  const beat = setInterval(
    () => void heartbeatStage1(o.state, o.workerId, lease, secs(o.now())),
    o.heartbeatMs ?? LEASE_HEARTBEAT_SECONDS * 1000,
  );
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}

/**
 * Lets timers and I/O run (the heartbeat above): reading a rollout and a SQLite statement are
 * synchronous under their promises, so without this a run would hold the event loop to its end.
 */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

async function extractOne(o: Phase1Options, run: Run, thread: ThreadRow, token: string): Promise<Phase1Outcome> {
  await yieldToEventLoop();
  const fail = async (why: string): Promise<Phase1Outcome> => {
    // Parse errors quote the reply; the reason lands in jobs.last_error and the --json report.
    const reason = redactSecrets(why);
    const m = ended(
      run,
      await markStage1Failed(
        o.state,
        thread.id,
        token,
        reason,
        o.retryDelaySeconds ?? STAGE1_RETRY_DELAY_SECONDS,
        secs(o.now()),
      ),
    );
    return {
      threadId: thread.id,
      status: "failed",
      error: "error" in m ? `${reason}; and recording it failed: ${m.error.message}` : reason,
    };
  };
  let extracted;
  let warnings: string[] = [];
  try {
    // Streamed: only the kept items of one rollout are in memory, never its file or other lines.
    const read = await readMemoryRollout(thread.rollout_path);
    if ("error" in read) return await fail(read.error.message);
    warnings = read.ok.warnings.map(redactSecrets);
    if (!hasUserTurn(read.ok.items))
      return withWarnings(await noOutput(o, run, thread, token, "no_user_turn"), warnings);
    extracted = await o.extractor(
      {
        threadId: thread.id,
        rolloutPath: thread.rollout_path,
        cwd: thread.cwd,
        gitBranch: thread.git_branch,
        items: read.ok.items,
      },
      o.signal,
    );
  } catch (e) {
    return withWarnings(await fail(`extraction crashed: ${errorMessage(e)}`), warnings);
  }
  if ("error" in extracted) return withWarnings(await fail(extracted.error.message), warnings);
  return withWarnings(await store(o, run, thread, token, extracted.ok), warnings);
}

/** Counts the claim as ended when `m` says this run closed its job (not when the claim was lost or recording failed). */
function ended(run: Run, m: Result<boolean>): Result<boolean> {
  if (!("error" in m) && m.ok) run.ended++;
  return m;
}

const withWarnings = (x: Phase1Outcome, warnings: string[]): Phase1Outcome =>
  warnings.length ? { ...x, warnings } : x;

/** Records "nothing to remember" (any older memory of the session is dropped). */
async function noOutput(
  o: Phase1Options,
  run: Run,
  thread: ThreadRow,
  token: string,
  status: "succeeded_no_output" | "no_user_turn",
): Promise<Phase1Outcome> {
  const m = ended(run, await markStage1NoOutput(o.state, thread.id, token, secs(o.now())));
  if ("error" in m) return { threadId: thread.id, status: "failed", error: m.error.message };
  return { threadId: thread.id, status: m.ok ? status : "lost_claim" };
}

async function store(
  o: Phase1Options,
  run: Run,
  thread: ThreadRow,
  token: string,
  extracted: Stage1Result,
): Promise<Phase1Outcome> {
  // Whatever the extractor, nothing unredacted reaches stage1_outputs.
  const res = redactStage1(extracted);
  if (res.rawMemory.trim() === "" || res.rolloutSummary.trim() === "")
    return noOutput(o, run, thread, token, "succeeded_no_output");
  const m = ended(
    run,
    await markStage1Succeeded(o.state, thread.id, token, secs(thread.updated_at_ms), res, secs(o.now())),
  );
  if ("error" in m) return { threadId: thread.id, status: "failed", error: m.error.message };
  return { threadId: thread.id, status: m.ok ? "succeeded" : "lost_claim" };
}
