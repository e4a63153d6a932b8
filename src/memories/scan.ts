/** Finds rollouts (Relay's own and, optionally, Codex's) and records them in `memory_threads`. */
import { statSync } from "node:fs";
import { listRollouts, type RolloutFile } from "../rollout/find.ts";
import { rawLines, readSessionMeta } from "../rollout/reader.ts";
import { errorMessage, ok, type Result } from "../util/result.ts";
import type { StateDb } from "./db.ts";
import { redactSecrets } from "../util/redact.ts";
import type { ThreadRow } from "./rows.ts";
import { addParseError, addUnreadable, emptySkips, type SkipReport } from "./skips.ts";
import { sourceName } from "./sources.ts";
import { listThreads, upsertThreads } from "./store-threads.ts";

export interface ScanOptions {
  relayHome: string;
  codexHome?: string;
  /** Newest files looked at per home. */
  scanLimit: number;
  /** Recorded on each thread; phase 1 claims only its own host's threads. */
  host: string;
}

export interface ScanReport {
  seen: number;
  updated: number;
  /** Every rollout this scan saw and could read, as now recorded. */
  rows: ThreadRow[];
  /** Files left out: unreadable, or not a rollout (parse error with file:line). */
  skipped: SkipReport;
  warnings: string[];
}

/** One file: its row (`changed` when the DB needs it), or why it was left out (recorded in `skipped`). */
type Seen = { row: ThreadRow; changed: boolean } | undefined;

/**
 * Lists and records rollouts. It only reads the homes: files are stat'ed and their first line
 * read; nothing under a home is written, renamed or touched (a Codex home stays as it was).
 */
export async function scanRollouts(state: StateDb, o: ScanOptions): Promise<Result<ScanReport>> {
  const known = await listThreads(state);
  if ("error" in known) return known;
  const byId = new Map(known.ok.map((t) => [t.id, t]));
  const homes: Array<{ origin: string; home: string }> = [{ origin: "relay", home: o.relayHome }];
  if (o.codexHome) homes.push({ origin: "codex", home: o.codexHome });
  // By id: a session in both homes (a resumed copy) counts once, as the last file listed.
  const rows = new Map<string, ThreadRow>();
  const changed: ThreadRow[] = [];
  const skipped = emptySkips();
  let seen = 0;
  for (const { origin, home } of homes) {
    for (const f of await listRollouts(home, { limit: o.scanLimit })) {
      seen++;
      const s = await scanOne(f, byId.get(f.id), origin, o.host, skipped);
      if (!s) continue;
      rows.set(s.row.id, s.row);
      if (s.changed) changed.push(s.row);
    }
  }
  const up = await upsertThreads(state, changed);
  if ("error" in up) return up;
  const warnings = [...skipped.parse_errors.map((p) => `${p.file}:${p.line}: ${p.message}`), ...skipped.unreadable.map((u) => u.message)];
  return ok({ seen, updated: changed.length, rows: [...rows.values()], skipped, warnings });
}

async function scanOne(f: RolloutFile, prev: ThreadRow | undefined, origin: string, host: string, skipped: SkipReport): Promise<Seen> {
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
