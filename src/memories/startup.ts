/**
 * The start-up pass: when a `relay run` session starts, relay runs prune + phase 1 + phase 2 in
 * the background, as the reference does at thread start (its `start_memories_startup_task`).
 *
 * - The session's process only decides and spawns (`withStartupMemories`): no DB, no await, so
 *   neither its first model request nor its exit waits. The pass is `relay memories consolidate`
 *   with the internal `--startup` flag, re-exec'd from the same binary (`selfCommand`), detached
 *   in its own session and process group, niced, stdin closed, stdout/stderr into the log. It
 *   outlives the session; killed, it leaves leases whose holder is gone, which the next pass or
 *   cron run on this host takes over at once (see holder.ts).
 * - Not started: in a sub-session (a `relay run` started from a session's command, which has
 *   RELAY_SESSION_ID; infty roles and the consolidation agent never come through here), with
 *   `[memories] generate_memories = false`, or when there can be nothing to do yet (no state
 *   DB and no rollout old enough to claim).
 * - The guard: the reference skips the pass when the account's rate limit is low. Relay has no
 *   rate-limit data, so a pass is skipped when the last one began less than
 *   `min_startup_interval_seconds` ago (recorded in the state DB; of concurrent start-ups, one
 *   runs). Then: retention pruning (200 rows), phase 1 with at most `max_rollouts_per_startup`
 *   claims (never the session that started it), phase 2. Cron runs share the leases.
 * - Engines: as `relay memories consolidate` picks them (engines.ts), from the session's provider
 *   settings; a scripted session has no model to spare, so its pass runs offline (heuristics).
 */
import { spawn } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import type { RelayConfig } from "../config/config.ts";
import { type MemorySettings, parseMemorySettings, stateDbSpec } from "../config/memories.ts";
import type { EmitEvent } from "../contracts/events.ts";
import { configPath, logsDir, sessionsDir, stateDbPath } from "../home/home.ts";
import { selfCommand } from "../protocol/child.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { Log } from "../util/log.ts";
import { errorMessage } from "../util/result.ts";

/** The internal flag of `relay memories consolidate` that runs one start-up pass. */
export const STARTUP_FLAG = "--startup";
/** Rollout files looked at, at most, to tell whether a first pass could claim anything. */
const PRECHECK_FILES = 500;
const LOG_ROTATE_BYTES = 1024 * 1024;

export type Env = Record<string, string | undefined>;

// ---------------------------------------------------------------------------------------------
// The log. One place to point elsewhere once relay has a log module.

/** `$RELAY_HOME/logs/memories.log`, the file the cron example appends to (not the memory folder: its files are diffed and committed). */
export function startupLogPath(home: string): string {
  return path.join(logsDir(home), "memories.log");
}

function logLine(text: string, pid = process.pid): string {
  return `${new Date().toISOString()} relay memories start-up [pid ${pid}]: ${text}\n`;
}

const relayLog = Log.create("memories-startup");

/** Appends a line to the start-up log, and to relay.log; never throws (a pass must not fail for its log). */
export function startupLog(home: string): (text: string) => void {
  return (text) => {
    relayLog.info(text);
    try {
      mkdirSync(logsDir(home), { recursive: true, mode: 0o700 });
      appendFileSync(startupLogPath(home), logLine(text), { mode: 0o600 });
    } catch {
      // nowhere left to say it
    }
  };
}

/** The log opened for appending (kept to about 1 MiB: the previous part becomes memories.log.1). */
function openLog(home: string): number {
  mkdirSync(logsDir(home), { recursive: true, mode: 0o700 });
  const file = startupLogPath(home);
  try {
    if (statSync(file).size > LOG_ROTATE_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // no log yet
  }
  return openSync(file, "a", 0o600);
}

// ---------------------------------------------------------------------------------------------
// In the session's process: decide and spawn.

export interface StartupOptions {
  home: string;
  /** The session's resolved config: its provider settings are the pass's. */
  config: RelayConfig;
  /** The session's --script: a scripted session's pass runs offline. */
  script?: string;
  env?: Env;
}

export type StartupDecision = { started: true; pid: number } | { started: false; reason: string };

/** The session's event sink, starting the pass just after the first `session_started` (once the session id is known). */
export function withStartupMemories(emit: EmitEvent, o: StartupOptions): EmitEvent {
  let seen = false;
  return (e) => {
    emit(e);
    if (seen || e.type !== "session_started") return;
    seen = true;
    // On the next turn of the event loop, while the session waits on its executor: deciding
    // (and spawning the pass) takes milliseconds the session's first request should not wait for.
    const sessionId = e.session_id;
    setTimeout(() => startStartupPass({ ...o, sessionId }), 0);
  };
}

/** Starts the pass unless one of the rules above says no; never throws, never prints. */
export function startStartupPass(o: StartupOptions & { sessionId: string }): StartupDecision {
  const env = o.env ?? process.env;
  try {
    if (env.RELAY_SESSION_ID?.trim()) return { started: false, reason: "a sub-session (RELAY_SESSION_ID is set)" };
    const settings = parseMemorySettings(o.config.memories ?? {}, configPath(o.home));
    if ("error" in settings) {
      startupLog(o.home)(`not started: ${settings.error.message}`);
      return { started: false, reason: settings.error.message };
    }
    if (!settings.ok.generate_memories) return { started: false, reason: "[memories] generate_memories = false" };
    if (!mayHaveWork(o.home, settings.ok, env, Date.now()))
      return { started: false, reason: "nothing to do yet: no state DB and no rollout old enough" };
    return spawnPass(o, env);
  } catch (e) {
    const reason = `could not start: ${errorMessage(e)}`;
    startupLog(o.home)(reason);
    return { started: false, reason };
  }
}

/** A non-default DB, an existing one, or a rollout inside the claim window (file mtime). */
export function mayHaveWork(home: string, s: MemorySettings, env: Env, nowMs: number): boolean {
  const spec = stateDbSpec(home, s, undefined, env);
  if (spec !== stateDbPath(home) || existsSync(spec)) return true;
  return rolloutInWindow(
    sessionsDir(home),
    nowMs - s.max_rollout_age_days * 86_400_000,
    nowMs - s.min_rollout_idle_hours * 3_600_000,
  );
}

/** Whether one of the newest PRECHECK_FILES rollouts under `root` (YYYY/MM/DD) was last written in [oldest, newest]. */
function rolloutInWindow(root: string, oldest: number, newest: number): boolean {
  const list = (dir: string, keep: (name: string) => boolean) => {
    try {
      return readdirSync(dir).filter(keep).sort().reverse();
    } catch {
      return [];
    }
  };
  const dated = (n: string) => /^\d+$/.test(n);
  let looked = 0;
  for (const y of list(root, dated))
    for (const m of list(path.join(root, y), dated))
      for (const d of list(path.join(root, y, m), dated)) {
        const dir = path.join(root, y, m, d);
        for (const n of list(dir, (f) => f.startsWith("rollout-") && f.endsWith(".jsonl"))) {
          if (++looked > PRECHECK_FILES) return false;
          try {
            const t = statSync(path.join(dir, n)).mtimeMs;
            if (t >= oldest && t <= newest) return true;
          } catch {
            // gone meanwhile
          }
        }
      }
  return false;
}

/** What the session tells its pass: its id and its provider settings. */
export const PassArgSchema = lazySchema(() =>
  z.object({
    session_id: z.string().min(1),
    overrides: z.object({
      model: z.string().optional(),
      provider: z.string().optional(),
      base_url: z.string().optional(),
      api_key_env: z.string().optional(),
      reasoning_effort: z.string().optional(),
      reasoning_summary: z.string().optional(),
      model_context_window: z.number().optional(),
    }),
  }),
);
export type PassArg = z.infer<typeof PassArgSchema>;

function passArg(o: StartupOptions & { sessionId: string }): PassArg {
  const c = o.config;
  return {
    session_id: o.sessionId,
    overrides: {
      model: c.model,
      provider: o.script ? "scripted" : c.model_provider,
      base_url: c.base_url,
      api_key_env: c.api_key_env,
      reasoning_effort: c.model_reasoning_effort,
      reasoning_summary: c.model_reasoning_summary,
      model_context_window: c.model_context_window,
    },
  };
}

function spawnPass(o: StartupOptions & { sessionId: string }, env: Env): StartupDecision {
  const self = selfCommand();
  if ("error" in self) {
    startupLog(o.home)(`not started: ${self.error.message}`);
    return { started: false, reason: self.error.message };
  }
  const fd = openLog(o.home);
  try {
    const [cmd, ...pre] = self.ok;
    const child = spawn(cmd!, [...pre, "memories", "consolidate", STARTUP_FLAG, JSON.stringify(passArg(o))], {
      env: env as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    child.once("error", (e) => startupLog(o.home)(`could not start ${cmd}: ${e.message}`));
    child.unref();
    if (child.pid === undefined) return { started: false, reason: `could not start ${cmd}` };
    try {
      os.setPriority(child.pid, 10);
    } catch {
      // not allowed here: it runs at the session's priority
    }
    writeSync(fd, logLine(`started for session ${o.sessionId}`, child.pid));
    return { started: true, pid: child.pid };
  } finally {
    closeSync(fd);
  }
}
