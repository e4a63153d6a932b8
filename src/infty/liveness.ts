/**
 * Whether a process is driving a run right now. run.json says "running" also after a crash, so
 * the status alone does not tell. The run's lease (lease.ts) says who drives it and whether that
 * process is still there; a run from before leases is judged by its heartbeat (written every
 * 15 s by default) and the process that started it (the pid in events.jsonl's last
 * run_started). Commands that change a stopped run's files (restore) refuse a live one.
 */

import { Buffer } from "node:buffer";
import { open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type LeaseView, pidAlive } from "./lease.ts";
import { FileLease } from "./lease-file.ts";
import type { RunMeta } from "./run-format.ts";

/** A heartbeat older than this means nobody drives the run (the default interval is 15 s). */
export const STALE_HEARTBEAT_MS = 60_000;

export interface Liveness {
  live: boolean;
  pid?: number;
  heartbeatAgeMs: number;
  /**
   * run.json says `running` but nobody drives the run (its driver was killed, or the machine
   * went down): why, and the command that resumes it. Absent for a live or a stopped run.
   */
  stale?: string;
}

const TAIL_CHUNK = 1 << 16;

/** The pid in the last run_started line of `lines`, searched from the end. */
function pidIn(lines: string[]): { found: boolean; pid?: number } {
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.includes('"run_started"')) continue;
    try {
      const pid = (JSON.parse(lines[i]!) as { pid?: unknown }).pid;
      return { found: true, pid: typeof pid === "number" ? pid : undefined };
    } catch {
      // a line torn by a crash
    }
  }
  return { found: false };
}

/**
 * The pid of the process that last started or resumed the run, from events.jsonl: read from the
 * end a chunk at a time (a days-long log holds many lines after its last run_started, rarely MBs).
 */
async function lastRunPid(runDir: string): Promise<number | undefined> {
  const fh = await open(path.join(runDir, "events.jsonl"), "r").catch(() => undefined);
  if (!fh) return undefined;
  try {
    let end = (await fh.stat()).size;
    let carry = Buffer.alloc(0);
    while (end > 0) {
      const start = Math.max(0, end - TAIL_CHUNK);
      const buf = Buffer.alloc(end - start);
      await fh.read(buf, 0, buf.length, start);
      const joined = Buffer.concat([buf, carry]);
      // The first piece may be a line cut by the chunk's start: keep it for the next round.
      const cut = start === 0 ? -1 : joined.indexOf(0x0a);
      if (start > 0 && cut === -1) {
        carry = joined;
        end = start;
        continue;
      }
      const whole = cut === -1 ? joined : joined.subarray(cut + 1);
      const r = pidIn(whole.toString("utf8").split("\n"));
      if (r.found) return r.pid;
      carry = cut === -1 ? Buffer.alloc(0) : joined.subarray(0, cut);
      end = start;
    }
    return undefined;
  } finally {
    await fh.close();
  }
}

const resumeWith = (state: Readonly<RunMeta>) => `resume with: relay infty resume ${state.run_id}`;

/** Liveness from the run's lease: held means driven (or being restored) right now. */
function fromLease(v: LeaseView, state: Readonly<RunMeta>, heartbeatAgeMs: number): Liveness {
  if (v.state === "free")
    return {
      live: false,
      heartbeatAgeMs,
      ...(state.status === "running" ? { stale: `stale: no process drives it; ${resumeWith(state)}` } : {}),
    };
  const pid = v.record.holder.host === os.hostname() ? { pid: v.record.holder.pid } : {};
  if (v.state === "held") return { live: true, ...pid, heartbeatAgeMs: Math.min(heartbeatAgeMs, v.heartbeatAgeMs) };
  return {
    live: false,
    ...pid,
    heartbeatAgeMs,
    ...(state.status === "running" ? { stale: `stale: ${v.why}; ${resumeWith(state)}` } : {}),
  };
}

export async function runLiveness(runDir: string, state: Readonly<RunMeta>, now = Date.now()): Promise<Liveness> {
  const heartbeatAgeMs = now - Date.parse(state.heartbeat_at);
  const lease = await new FileLease(runDir, state.run_id).view(now);
  if (lease) return fromLease(lease, state, heartbeatAgeMs);
  if (state.status !== "running") return { live: false, heartbeatAgeMs };
  const pid = await lastRunPid(runDir);
  const gone = pid !== undefined && !pidAlive(pid);
  if (!gone && heartbeatAgeMs < STALE_HEARTBEAT_MS) return { live: true, pid, heartbeatAgeMs };
  const why = gone ? `driver pid ${pid} gone` : `no heartbeat since ${state.heartbeat_at}`;
  return { live: false, pid, heartbeatAgeMs, stale: `stale: ${why}; ${resumeWith(state)}` };
}

/** The status to show for a run: `running` only while someone drives it, else why not ("stale: …"). */
export function shownStatus(state: Readonly<RunMeta>, l: Liveness): string {
  return l.stale ?? state.status;
}

/** What to tell someone who wants to change a live run. */
export function stopFirst(runId: string, l: Liveness, then: string): string {
  const who = l.pid ? `pid ${l.pid}, ` : "";
  const how = l.pid ? `press Ctrl-C where it runs, or: kill ${l.pid}` : "press Ctrl-C where it runs";
  return `run ${runId} is live (${who}last heartbeat ${Math.round(l.heartbeatAgeMs / 1000)} s ago): stop it first (${how}; it stays resumable), then: ${then}`;
}
