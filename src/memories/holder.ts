/**
 * Who holds a memories lease (a phase-1 claim or the phase-2 lock), and whether that holder is
 * provably gone. A worker id is `relay-memories:<host>:<pid>:<start>:<random>`, where <start>
 * names the process instance: on Linux the boot id and the start time in clock ticks
 * (/proc/<pid>/stat), elsewhere the start time `ps` reports. A pid that was reused by another
 * process therefore does not pass for the holder. Ids without <start> (older relays) are judged
 * by the pid alone.
 */

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { procStatFields, START_TIME_FIELD } from "../util/proc-stat.ts";
import type { JobRow } from "./store/rows.ts";

export interface Holder {
  host: string;
  pid: number;
  /** The process instance (see above); absent when it could not be read. */
  start?: string;
}

/** A holder heartbeats every this many seconds while it works. */
export const LEASE_HEARTBEAT_SECONDS = 30;
/** A heartbeat older than this (ten missed beats) means the holder is gone. */
export const LEASE_STALE_SECONDS = 300;

const PREFIX = "relay-memories";

function linuxStart(pid: number): string | undefined {
  const ticks = procStatFields(pid)?.[START_TIME_FIELD];
  if (!ticks) return undefined;
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8")
      .replace(/[^0-9a-f]/g, "")
      .slice(0, 12);
    return `b${boot}t${ticks}`;
  } catch {
    return undefined;
  }
}

function psStart(pid: number): string | undefined {
  const r = spawnSync("ps", ["-o", "lstart=", "-p", String(pid)], { encoding: "utf8" });
  const t = Date.parse(r.stdout?.trim() ?? "");
  return r.status === 0 && Number.isFinite(t) ? `s${Math.floor(t / 1000)}` : undefined;
}

/** The start token of a process on this host, or undefined (gone, or unreadable here). */
export function processStart(pid: number): string | undefined {
  return process.platform === "linux" ? linuxStart(pid) : psStart(pid);
}

let selfStart: { value: string | undefined } | undefined;
/** This process's start token, read once. */
function myStart(): string | undefined {
  selfStart ??= { value: processStart(process.pid) };
  return selfStart.value;
}

export function newWorkerId(): string {
  return workerIdFor({ host: os.hostname(), pid: process.pid, start: myStart() });
}

export function workerIdFor(h: Holder): string {
  return `${PREFIX}:${h.host}:${h.pid}:${h.start ? `${h.start}:` : ""}${Math.random().toString(36).slice(2, 10)}`;
}

export function parseWorkerId(id: string | null): Holder | undefined {
  const m = /^relay-memories:(.+?):(\d+):(?:([bs][0-9a-z]+):)?[a-z0-9]+$/.exec(id ?? "");
  return m ? { host: m[1]!, pid: Number(m[2]), ...(m[3] ? { start: m[3] } : {}) } : undefined;
}

export type Liveness = { state: "alive" } | { state: "gone"; why: string } | { state: "unknown"; why: string };

/** Whether the holder process still runs, judged from this host. */
export function liveness(h: Holder | undefined): Liveness {
  if (!h) return { state: "unknown", why: "the holder is not a relay process id" };
  if (h.host !== os.hostname()) return { state: "unknown", why: `it runs on another host (${h.host})` };
  let exists = true;
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    // EPERM: the pid exists but belongs to another user.
    exists = (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
  if (!exists) return { state: "gone", why: "the process is gone" };
  if (!h.start) return { state: "alive" };
  const now = h.pid === process.pid ? myStart() : processStart(h.pid);
  if (now === undefined || now === h.start) return { state: "alive" };
  return { state: "gone", why: `pid ${h.pid} now belongs to another process (the holder is gone)` };
}

/** What a status line says about a lease holder. */
export interface HolderReport {
  worker_id: string | null;
  host: string | null;
  pid: number | null;
  /** ISO time the lease was taken. */
  since: string | null;
  heartbeat_age_s: number | null;
  lease_until: string | null;
  state: Liveness["state"];
}

const iso = (s: number | null) => (s === null ? null : new Date(s * 1000).toISOString());

export function holderReport(job: JobRow, now: number): HolderReport {
  const h = parseWorkerId(job.worker_id);
  const beat = job.heartbeat_at ?? job.started_at;
  return {
    worker_id: job.worker_id,
    host: h?.host ?? null,
    pid: h?.pid ?? null,
    since: iso(job.started_at),
    heartbeat_age_s: beat === null ? null : Math.max(0, now - beat),
    lease_until: iso(job.lease_until),
    state: liveness(h).state,
  };
}

/** `pid 4242 on build-1` */
export function holderName(r: HolderReport): string {
  return r.pid !== null ? `pid ${r.pid} on ${r.host}` : (r.worker_id ?? "an unknown worker");
}

/** `since 2026-…Z, heartbeat 12 s ago` */
export function holderSince(r: HolderReport): string {
  return `since ${r.since ?? "?"}${r.heartbeat_age_s !== null ? `, heartbeat ${r.heartbeat_age_s} s ago` : ""}`;
}

/**
 * Why a live lease may be taken over at once, or undefined to keep it: its holder ran on this
 * host and is gone, or its heartbeat is stale. A holder proven alive here keeps its lease even
 * with a stale heartbeat (a stopped or stuck process would otherwise share the memory folder).
 */
export function takeOverReason(job: JobRow, now: number, staleSeconds = LEASE_STALE_SECONDS): string | undefined {
  const live = liveness(parseWorkerId(job.worker_id));
  if (live.state === "gone") return live.why;
  if (live.state === "alive") return undefined;
  if (job.heartbeat_at !== null && now - job.heartbeat_at > staleSeconds)
    return `its heartbeat is ${now - job.heartbeat_at} s old (stale after ${staleSeconds} s)`;
  return undefined;
}
