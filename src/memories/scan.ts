/** Finds rollouts (Relay's own and, optionally, Codex's) and records them in `memory_threads`. */
import { statSync } from "node:fs";
import { listRollouts } from "../rollout/find.ts";
import { readSessionMeta } from "../rollout/reader.ts";
import { ok, type Result } from "../util/result.ts";
import type { StateDb } from "./db.ts";
import { redactSecrets } from "./redact.ts";
import type { ThreadRow } from "./rows.ts";
import { listThreads, upsertThreads } from "./store-threads.ts";

/** Sessions a person drove; `exec`, sub-agents and relay's own consolidation runs are excluded. */
export const INTERACTIVE_SOURCES = ["cli", "vscode"] as const;

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
  warnings: string[];
}

function sourceName(source: unknown): string {
  if (typeof source === "string") return source;
  if (source && typeof source === "object") return Object.keys(source)[0] ?? "other";
  return "unknown";
}

export async function scanRollouts(state: StateDb, o: ScanOptions): Promise<Result<ScanReport>> {
  const known = await listThreads(state);
  if ("error" in known) return known;
  const byId = new Map(known.ok.map((t) => [t.id, t]));
  const homes: Array<{ origin: string; home: string }> = [{ origin: "relay", home: o.relayHome }];
  if (o.codexHome) homes.push({ origin: "codex", home: o.codexHome });
  const changed: ThreadRow[] = [];
  const warnings: string[] = [];
  let seen = 0;
  for (const { origin, home } of homes) {
    for (const f of await listRollouts(home, { limit: o.scanLimit })) {
      seen++;
      let mtimeMs: number;
      try {
        // Synchronous: a stat takes microseconds, and the scan makes one per rollout (thousands).
        mtimeMs = Math.floor(statSync(f.path).mtimeMs);
      } catch {
        continue;
      }
      const prev = byId.get(f.id);
      if (prev && prev.rollout_path === f.path && prev.updated_at_ms === mtimeMs && prev.host === o.host) continue;
      if (prev && prev.rollout_path === f.path) {
        changed.push({ ...prev, updated_at_ms: mtimeMs, host: o.host });
        continue;
      }
      const meta = await readSessionMeta(f.path);
      if ("error" in meta) {
        warnings.push(meta.error.message);
        continue;
      }
      const m = meta.ok;
      changed.push({
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
        host: o.host,
      });
    }
  }
  const up = await upsertThreads(state, changed);
  if ("error" in up) return up;
  return ok({ seen, updated: changed.length, warnings });
}
