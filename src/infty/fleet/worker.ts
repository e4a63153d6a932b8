/**
 * `relay infty worker`: claims runs from the fleet's queue and drives each in a child process
 * (`relay infty run` the first time, `relay infty resume` after), at most `maxRuns` at once. The
 * child holds the run's lease and records how the run ended; the worker heartbeats its own row
 * and requeues a run whose child died without saying. A child watches its stdin, a pipe only the
 * worker holds: when the worker dies (even SIGKILL) the child stops after its current step and
 * queues its run again for another worker. SIGTERM or SIGINT stops the worker the same way.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { selfCommand } from "../../protocol/child.ts";
import { Log } from "../../util/log.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { FLEET_DB_ENV, RUNS_ROOT_ENV } from "../run-store.ts";
import type { FleetDb } from "./db.ts";
import { beatWorker, type Claim, claimRun, registerWorker, requeueAfterCrash } from "./queue.ts";
import { cloneForRun } from "./repo-clone.ts";

const log = Log.create("infty-worker");

/** Set in a driver a worker started: it then stops when its stdin closes (the worker is gone). */
export const FLEET_CHILD_ENV = "RELAY_INFTY_FLEET_CHILD";
/** How long a silent driver keeps its run (ms); a fleet's workers must agree on it. */
export const LEASE_TIMEOUT_ENV = "RELAY_INFTY_LEASE_TIMEOUT_MS";

export interface WorkerOptions {
  fleet: FleetDb;
  /** The fleet DB's URL, handed to the drivers. */
  dbUrl: string;
  name: string;
  maxRuns: number;
  runsRoot: string;
  /** How often to look for work when idle. */
  pollMs: number;
  staleMs: number;
  /** Runs one submitter may have running across the fleet (default: no cap). */
  perSubmitter?: number;
  /** Ends the worker: it claims nothing more and stops its drivers (their runs are queued again). */
  signal: AbortSignal;
  /** One line per event, for the terminal. */
  say(line: string): void;
}

/**
 * The argv after relay's own command that drives `c`: `run` (on `clone`, the run's clone of its
 * repository, or on none), or `resume` once the run exists.
 */
export function driverArgs(c: Claim, clone?: string): string[] {
  if (c.resume) return ["infty", "resume", c.id, ...c.resumeArgs];
  const repo = clone ? ["-C", clone] : c.repo ? [] : ["--no-repo"];
  return ["infty", "run", c.objective, ...c.args, ...repo, "--run-id", c.id];
}

/** Whether run `id` exists under `runsRoot` (or was cut off while being created): then it is resumed. */
function runExists(runsRoot: string, id: string): boolean {
  return existsSync(path.join(runsRoot, id, "run.json")) || existsSync(path.join(runsRoot, `.creating-${id}`));
}

/**
 * What the driver of `claimed` needs before it starts: whether it resumes (a driver before it may
 * have died before the run was created) and, for a new run on a repository, its clone.
 */
async function prepareDriver(o: WorkerOptions, claimed: Claim): Promise<Result<{ claim: Claim; clone?: string }>> {
  const exists = runExists(o.runsRoot, claimed.id);
  // Never start a created run afresh because this host cannot see it (a runs root not mounted).
  if (claimed.created && !exists)
    return err(
      "run_store_missing",
      `run ${claimed.id} was created, but its store is not under ${o.runsRoot} on ${os.hostname()}: is the shared runs root mounted there (--runs-root)?`,
    );
  const claim = { ...claimed, resume: claimed.resume && exists };
  if (claim.resume || !claim.repo) return ok({ claim });
  o.say(`${claim.id}: cloning ${claim.repo.source}${claim.repo.commit ? ` at ${claim.repo.commit.slice(0, 12)}` : ""}`);
  const clone = await cloneForRun(o.runsRoot, claim.id, claim.repo.source, claim.repo.commit);
  return "error" in clone ? clone : ok({ claim, clone: clone.ok });
}

export async function runWorker(o: WorkerOptions): Promise<Result<void>> {
  const registered = await registerWorker(o.fleet, o.name, o.maxRuns, o.staleMs);
  if ("error" in registered) return registered;
  const self = selfCommand();
  if ("error" in self) return self;
  const drivers = new Map<string, ChildProcess>();
  let wake: () => void = () => {};
  const beat = setInterval(() => void beatWorker(o.fleet, o.name), Math.min(15_000, o.staleMs / 4));
  o.signal.addEventListener("abort", () => {
    for (const child of drivers.values()) child.kill("SIGTERM");
    wake();
  });
  o.say(`worker ${o.name} (pid ${process.pid}) takes up to ${o.maxRuns} run(s) from ${o.fleet.location}`);
  try {
    while (!o.signal.aborted) {
      const claimed =
        drivers.size < o.maxRuns
          ? await claimRun(o.fleet, o.name, { staleMs: o.staleMs, perSubmitter: o.perSubmitter })
          : ok(undefined);
      if ("error" in claimed) o.say(`warning: ${claimed.error.message}`);
      else if (claimed.ok) {
        const ready = await prepareDriver(o, claimed.ok);
        if ("error" in ready) {
          o.say(`${claimed.ok.id}: cannot drive it here: ${ready.error.message}`);
          // Another worker may manage (its mount, its network): queued again, parked if none does.
          await requeueAfterCrash(o.fleet, claimed.ok.id, o.name, `could not start: ${ready.error.message}`);
        } else
          drivers.set(
            claimed.ok.id,
            startDriver(o, self.ok, ready.ok, drivers, () => wake()),
          );
        continue;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, o.pollMs);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    await Promise.all(
      [...drivers.values()].map((c) => new Promise((r) => (c.exitCode === null ? c.once("exit", r) : r(null)))),
    );
  } finally {
    clearInterval(beat);
    await beatWorker(o.fleet, o.name, true);
  }
  o.say(`worker ${o.name} stopped`);
  return ok(undefined);
}

function startDriver(
  o: WorkerOptions,
  self: string[],
  { claim: c, clone }: { claim: Claim; clone?: string },
  drivers: Map<string, ChildProcess>,
  done: () => void,
): ChildProcess {
  const argv = [...self, ...driverArgs(c, clone)];
  o.say(`${c.id}: ${c.resume ? "resuming" : "starting"}${c.tookOver ? ` (${c.tookOver})` : ""}`);
  log.info("driver starting", { run_id: c.id, resume: c.resume });
  const child = spawn(argv[0]!, argv.slice(1), {
    // Where it was submitted, when this host has that directory.
    cwd: existsSync(c.cwd) ? c.cwd : o.runsRoot,
    env: {
      ...process.env,
      // The fleet DB goes in the environment, not the arguments: any process can read those.
      [FLEET_DB_ENV]: o.dbUrl,
      [RUNS_ROOT_ENV]: o.runsRoot,
      [FLEET_CHILD_ENV]: o.name,
      [LEASE_TIMEOUT_ENV]: String(o.staleMs),
    },
    stdio: ["pipe", "ignore", "pipe"],
  });
  let tail = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (text: string) => {
    tail = (tail + text).slice(-2000);
    for (const line of text.split("\n")) if (line.trim()) o.say(`${c.id}: ${line}`);
  });
  child.on("error", (e) => (tail += `\n${e.message}`));
  child.on("exit", (code, signal) => {
    // A run taken over from this worker's own stuck driver has a newer driver here by now.
    if (drivers.get(c.id) === child) drivers.delete(c.id);
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    o.say(`${c.id}: driver ${how}`);
    // A driver records its own end; this only catches one that could not.
    void requeueAfterCrash(o.fleet, c.id, o.name, `${how}${tail ? `: ${tail.trim().split("\n").at(-1)}` : ""}`).then(
      done,
    );
  });
  return child;
}

/**
 * A driver started by a worker: `stop` once its stdin closes, i.e. once the worker is gone.
 * Its stderr went to the worker too: from then on what it prints is dropped, since a write to a
 * pipe nobody reads would end it before it could stop cleanly.
 */
export function watchWorker(stop: () => void): void {
  if (!process.env[FLEET_CHILD_ENV]) return;
  const orphaned = () => {
    for (const out of [process.stdout, process.stderr]) {
      out.on("error", () => {});
      out.write = (() => true) as typeof out.write;
    }
    stop();
  };
  process.stdin.on("end", orphaned);
  process.stdin.on("error", orphaned);
  process.stdin.resume();
}

/** The lease timeout a fleet runs with (RELAY_INFTY_LEASE_TIMEOUT_MS), or undefined for the default. */
export function leaseTimeoutMs(): number | undefined {
  const v = Number(process.env[LEASE_TIMEOUT_ENV]);
  return Number.isInteger(v) && v > 0 ? v : undefined;
}
