/**
 * Whether a process is driving a run right now. run.json says "running" also after a crash, so
 * the status alone does not tell: a live run's heartbeat (written every 15 s by default) is
 * fresh, and the process that started it (its pid is in events.jsonl's last run_started) is
 * alive. Commands that change a stopped run's files (restore) refuse a live one.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { RunMeta } from "./run-store.ts";

/** A heartbeat older than this means nobody drives the run (the default interval is 15 s). */
export const STALE_HEARTBEAT_MS = 60_000;

export interface Liveness {
  live: boolean;
  pid?: number;
  heartbeatAgeMs: number;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The pid of the process that last started or resumed the run, from events.jsonl. */
async function lastRunPid(runDir: string): Promise<number | undefined> {
  const text = await readFile(path.join(runDir, "events.jsonl"), "utf8").catch(() => "");
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.includes('"run_started"')) continue;
    try {
      const pid = (JSON.parse(lines[i]!) as { pid?: unknown }).pid;
      return typeof pid === "number" ? pid : undefined;
    } catch {
      // a line torn by a crash
    }
  }
  return undefined;
}

export async function runLiveness(runDir: string, state: Readonly<RunMeta>, now = Date.now()): Promise<Liveness> {
  const heartbeatAgeMs = now - Date.parse(state.heartbeat_at);
  if (state.status !== "running" || heartbeatAgeMs >= STALE_HEARTBEAT_MS) return { live: false, heartbeatAgeMs };
  const pid = await lastRunPid(runDir);
  return { live: pid === undefined || pidAlive(pid), pid, heartbeatAgeMs };
}

/** What to tell someone who wants to change a live run. */
export function stopFirst(runId: string, l: Liveness, then: string): string {
  const who = l.pid ? `pid ${l.pid}, ` : "";
  const how = l.pid ? `press Ctrl-C where it runs, or: kill ${l.pid}` : "press Ctrl-C where it runs";
  return `run ${runId} is live (${who}last heartbeat ${Math.round(l.heartbeatAgeMs / 1000)} s ago): stop it first (${how}; it stays resumable), then: ${then}`;
}
