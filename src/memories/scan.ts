/** Finds rollouts (Relay's own and, optionally, Codex's) and records them in `memory_threads`. */
import { statSync } from "node:fs";
import { type RolloutFile, walkRollouts } from "../rollout/find.ts";
import { rawLines, readSessionMeta } from "../rollout/reader.ts";
import { sourceName } from "../rollout/sources.ts";
import { redactSecrets } from "../util/redact.ts";
import { errorMessage, ok, type Result } from "../util/result.ts";
import { addParseError, addUnreadable, emptySkips, type SkipReport } from "./skips.ts";
import type { StateDb } from "./store/db.ts";
import type { ThreadRow } from "./store/rows.ts";
import { getThreads, upsertThreads } from "./store/threads.ts";

export interface ScanOptions {
  relayHome: string;
  codexHome?: string;
  /** Newest files looked at per home. */
  scanLimit: number;
  /** Recorded on each thread; phase 1 claims only its own host's threads. */
  host: string;
}

export interface ScanReport<T> {
  seen: number;
  updated: number;
  /**
   * What `keep` made of every rollout this scan saw and could read, by id. A session in both
   * homes (a resumed copy) counts once, as the last file listed.
   */
  kept: Map<string, T>;
  /** Files left out: unreadable, or not a rollout (parse error with file:line). */
  skipped: SkipReport;
  warnings: string[];
}

/**
 * What the scan hands `keep` for each rollout: its row, and whether `memory_threads` holds that
 * row when the scan ends (false only for a resumed copy whose row an earlier file of the same id
 * overwrote; the DB keeps that file's row, as it always has).
 */
export type Keep<T> = (row: ThreadRow, stored: boolean) => T;

/** Files looked at per page: their rows are read in one query and the changed ones upserted in one transaction. */
export const SCAN_PAGE = 200;

/** One file: its row (`changed` when the DB needs it), or why it was left out (recorded in `skipped`). */
type Seen = { row: ThreadRow; changed: boolean } | undefined;

interface ScanState<T> {
  o: ScanOptions;
  keep: Keep<T>;
  kept: Map<string, T>;
  /** Rows as they were before this scan, of the ids it moved to another file (see `scanPage`). */
  moved: Map<string, ThreadRow>;
  skipped: SkipReport;
  updated: number;
}

/**
 * Lists and records rollouts, a page of files at a time: only one page of files and rows is
 * held, plus what `keep` returns for each rollout. It only reads the homes: files are stat'ed
 * and their first line read; nothing under a home is written, renamed or touched (a Codex home
 * stays as it was).
 */
export async function scanRollouts<T>(state: StateDb, o: ScanOptions, keep: Keep<T>): Promise<Result<ScanReport<T>>> {
  const homes: Array<{ origin: string; home: string }> = [{ origin: "relay", home: o.relayHome }];
  if (o.codexHome) homes.push({ origin: "codex", home: o.codexHome });
  const s: ScanState<T> = { o, keep, kept: new Map(), moved: new Map(), skipped: emptySkips(), updated: 0 };
  let seen = 0;
  for (const { origin, home } of homes) {
    let page: RolloutFile[] = [];
    let listed = 0;
    for await (const f of walkRollouts(home)) {
      page.push(f);
      listed++;
      if (page.length >= SCAN_PAGE || listed >= o.scanLimit) {
        const r = await scanPage(state, s, page, origin);
        if ("error" in r) return r;
        page = [];
      }
      if (listed >= o.scanLimit) break;
    }
    const r = await scanPage(state, s, page, origin);
    if ("error" in r) return r;
    seen += listed;
  }
  const warnings = [
    ...s.skipped.parse_errors.map((p) => `${p.file}:${p.line}: ${p.message}`),
    ...s.skipped.unreadable.map((u) => u.message),
  ];
  return ok({ seen, updated: s.updated, kept: s.kept, skipped: s.skipped, warnings });
}

/**
 * Records one page of files. Each file is compared with its row as it was before the scan: the
 * DB's row, unless an earlier file of the same id (a resumed copy) moved it to that file in this
 * scan; then the row from before is taken from `moved`.
 */
async function scanPage<T>(
  state: StateDb,
  s: ScanState<T>,
  page: RolloutFile[],
  origin: string,
): Promise<Result<number>> {
  if (!page.length) return ok(0);
  const known = await getThreads(state, [...new Set(page.map((f) => f.id))]);
  if ("error" in known) return known;
  const changed: ThreadRow[] = [];
  for (const f of page) {
    const prev = s.moved.get(f.id) ?? known.ok.get(f.id);
    const seen = await scanOne(f, prev, origin, s.o.host, s.skipped);
    if (!seen) continue;
    if (seen.changed) {
      changed.push(seen.row);
      if (prev && prev.rollout_path !== seen.row.rollout_path) s.moved.set(f.id, prev);
    }
    s.kept.set(f.id, s.keep(seen.row, seen.changed || !s.moved.has(f.id)));
  }
  s.updated += changed.length;
  return upsertThreads(state, changed);
}

async function scanOne(
  f: RolloutFile,
  prev: ThreadRow | undefined,
  origin: string,
  host: string,
  skipped: SkipReport,
): Promise<Seen> {
  let mtimeMs: number;
  try {
    // Synchronous: a stat takes microseconds, and the scan makes one per rollout (thousands).
    mtimeMs = Math.floor(statSync(f.path).mtimeMs);
  } catch (e) {
    addUnreadable(skipped, f.path, `cannot stat ${f.path}: ${errorMessage(e)}`);
    return undefined;
  }
  if (prev && prev.rollout_path === f.path) {
    const same = prev.updated_at_ms === mtimeMs && prev.host === host;
    return { row: same ? prev : { ...prev, updated_at_ms: mtimeMs, host }, changed: !same };
  }
  const meta = await readSessionMeta(f.path);
  if ("error" in meta) {
    const code = meta.error.code;
    if (code === "rollout_read" || code === "rollout_not_found") addUnreadable(skipped, f.path, meta.error.message);
    else addParseError(skipped, f.path, await firstLineNo(f.path), meta.error.message);
    return undefined;
  }
  const m = meta.ok;
  const row: ThreadRow = {
    id: f.id,
    origin,
    rollout_path: f.path,
    source: sourceName(m.source),
    // Both end up in memory files (group names, summary headers): redacted like everything else.
    cwd: redactSecrets(m.cwd),
    git_branch: m.git?.branch == null ? null : redactSecrets(m.git.branch),
    created_at_ms: f.createdAt.getTime(),
    updated_at_ms: mtimeMs,
    memory_mode: prev?.memory_mode ?? "enabled",
    host,
  };
  return { row, changed: true };
}

/** The line a rollout's session_meta should be on: its first non-blank line (1 for an empty file). */
async function firstLineNo(file: string): Promise<number> {
  try {
    for await (const l of rawLines(file)) if (l.text.trim() !== "") return l.lineNo;
  } catch {
    // Unreadable now: the message already says what is wrong; point at the top.
  }
  return 1;
}
