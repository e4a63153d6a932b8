/**
 * The fleet's commands: `relay infty submit` (queue a run in the fleet DB), `relay infty worker`
 * (drive queued runs), `relay infty workers` and `relay infty list --db` (what the fleet does),
 * and what `run`/`resume --db` need to drive a run under the fleet's lease. The fleet's modules
 * (kysely, pg) are loaded only when a fleet DB is named.
 */
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { loadConfig } from "../../config/config.ts";
import { relayHome } from "../../home/home.ts";
import type { FleetDb, Submission } from "../../infty/fleet/index.ts";
import type { InftyOptions, InftyResult } from "../../infty/orchestrator.ts";
import { dirtyEntries, findRepository, isRepoUrl } from "../../infty/repo/index.ts";
import { FLEET_DB_ENV, generateRunId, RunStore, validateRunId } from "../../infty/run-store.ts";
import { isPostgresUrl } from "../../postgres/url.ts";
import type { Result } from "../../util/result.ts";
import { alignRows, outputWidth } from "../session-format.ts";
import { ExitCode, fail } from "../usage.ts";
import { wholeNumber } from "./flags.ts";

export const DB_ENV = FLEET_DB_ENV;
export const DB_HELP = `the fleet DB, postgres://… (default: ${DB_ENV}, else [infty] db in config.toml)`;

/** Who is asking, as the fleet records it: user@host. */
const whoAmI = () => `${os.userInfo().username}@${os.hostname()}`;

/** The fleet DB's URL: the flag, RELAY_INFTY_DB, or config.toml's [infty] db; undefined for none. */
export async function fleetUrl(flag: string | undefined): Promise<string | undefined> {
  if (flag !== undefined || process.env[DB_ENV]) {
    const url = flag ?? process.env[DB_ENV]!;
    if (!isPostgresUrl(url))
      fail(
        `${flag !== undefined ? "--db" : DB_ENV} must be a postgres:// URL, not ${JSON.stringify(url)}`,
        ExitCode.Usage,
      );
    return url;
  }
  const loaded = await loadConfig(relayHome());
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  return loaded.ok.config.infty?.db;
}

/** The fleet DB at `url` (or the configured one), opened and migrated; exits with the reason when it cannot be. */
export async function openFleet(flag: string | undefined): Promise<{ fleet: FleetDb; url: string }> {
  const url = await fleetUrl(flag);
  if (!url)
    fail(`no fleet DB: give --db postgres://…, set ${DB_ENV}, or set db under [infty] in config.toml`, ExitCode.Usage);
  const { openFleetDb } = await import("../../infty/fleet/index.ts");
  const opened = await openFleetDb(url);
  if ("error" in opened) fail(opened.error.message, ExitCode.Failure);
  return { fleet: opened.ok, url };
}

/** How often a fleet run's driver looks for stops and notes asked through the fleet DB. */
const REQUESTS_EVERY_MS = 2000;

/**
 * What `run`/`resume --db` add: the fleet's lease, carrying out stops and notes asked through
 * the fleet DB, and recording how the run ended in the queue.
 */
export async function fleetDriving(flag: string | undefined, runId: string, stop: () => void) {
  const url = await fleetUrl(flag);
  if (!url) return undefined;
  const { fleet } = await openFleet(url);
  const { FLEET_CHILD_ENV, PgLease, finishRun, leaseTimeoutMs, requeueAfterCrash, watchRequests, watchWorker } =
    await import("../../infty/fleet/index.ts");
  let stoppedByWorker = false;
  let stoppedBy: string | undefined;
  watchWorker(() => {
    stoppedByWorker = true;
    stop();
  });
  const { noteForDirector } = await import("../../infty/operator.ts");
  const unwatch = watchRequests(fleet, runId, REQUESTS_EVERY_MS, {
    stop(from) {
      stoppedBy ??= from;
      stop();
    },
    deliver: (r) => noteForDirector(relayHome(), runId, r.text ?? "", `${r.from} (through the fleet DB)`),
  });
  const timeout = leaseTimeoutMs();
  const lease: InftyOptions["lease"] = (_dir, id) => new PgLease(fleet, id, timeout);
  return {
    lease,
    url,
    /** Beats often enough for the fleet's lease timeout (four beats to a timeout). */
    heartbeatMs: timeout === undefined ? undefined : Math.min(15_000, Math.max(50, Math.floor(timeout / 4))),
    /** Records `r` for run `runId`, unless another driver has the run now. */
    async record(r: Result<InftyResult>, signalled: boolean): Promise<void> {
      unwatch();
      if ("error" in r) {
        // Another worker may reach the runs root: queued again, and parked if it keeps failing.
        if (r.error.code === "store_unwritable")
          await requeueAfterCrash(fleet, runId, process.env[FLEET_CHILD_ENV] ?? "", r.error.message);
        else if (!["lease_lost", "run_live", "run_exists"].includes(r.error.code))
          await finishRun(fleet, runId, "parked", r.error.message);
      } else if (r.ok.status === "interrupted" && stoppedBy) {
        await finishRun(
          fleet,
          r.ok.runId,
          "stopped",
          `stopped by ${stoppedBy}; resume it with relay infty resume ${runId}`,
        );
      } else {
        const s = r.ok.status;
        const requeue = s === "interrupted" && (signalled || stoppedByWorker);
        const state = s === "complete" ? "complete" : requeue ? "queued" : s === "interrupted" ? "stopped" : "failed";
        const reason = state === "complete" ? r.ok.pushError && `push failed: ${r.ok.pushError}` : r.ok.detail;
        await finishRun(fleet, r.ok.runId, state, reason || undefined);
      }
      await fleet.close();
    },
  };
}

/**
 * The arguments of `argv` (what follows `submit`) that `relay infty run` takes again: without
 * the objective and the options submit keeps for itself.
 */
export function runArgsOf(
  cmd: { readonly options: readonly { long?: string; short?: string; required: boolean; optional: boolean }[] },
  argv: readonly string[],
  own: readonly string[],
  keep: (flag: string) => boolean = () => true,
): string[] {
  const takesValue = new Map<string, boolean>();
  for (const o of cmd.options) {
    for (const flag of [o.long, o.short]) if (flag) takesValue.set(flag, o.required || o.optional);
  }
  const out: string[] = [];
  let positional = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (a === "--") {
      positional = true;
      continue;
    }
    if (!positional && name.startsWith("-") && takesValue.has(name)) {
      const value = eq > 0 ? [] : takesValue.get(name) ? [argv[++i]!] : [];
      if (!own.includes(name) && keep(name)) out.push(a, ...value);
    }
    // Anything else is the objective (the one positional argument), stored on its own.
  }
  return out;
}

/**
 * The repository a submitted run works on: a URL as given, or the repository of the -C path (or
 * of the current directory) at its HEAD; none with --no-repo or outside any. A worker clones it,
 * so the run starts from a commit: uncommitted changes are refused, as run refuses them.
 */
async function submittedRepo(opts: Record<string, unknown>): Promise<Submission["repo"]> {
  const given = opts.repo as string | false | undefined;
  if (opts.includeUncommitted)
    fail(
      "--include-uncommitted is not for submit: a worker clones the repository, so a fleet run starts from a commit; commit or stash your changes, then submit",
      ExitCode.Usage,
    );
  const needsRepo = () => {
    if (opts.branch !== undefined || opts.push)
      fail(
        `--branch and --push need a repository: submit inside one, or give it with -C <repo or URL>${given === false ? " (instead of --no-repo)" : ""}`,
        ExitCode.Usage,
      );
    return undefined;
  };
  if (given === false) return needsRepo();
  if (typeof given === "string" && isRepoUrl(given)) return { source: given };
  const dir = path.resolve(given ?? ".");
  if (typeof given === "string" && !existsSync(dir)) fail(`-C ${given}: no such folder`, ExitCode.Usage);
  const found = await findRepository(dir);
  if ("error" in found) fail(found.error.message, ExitCode.Usage);
  if (!found.ok) {
    if (typeof given === "string")
      fail(`-C ${given}: not inside a git repository; give a repository's folder or URL, or --no-repo`, ExitCode.Usage);
    return needsRepo();
  }
  const dirty = await dirtyEntries(found.ok.top);
  if ("error" in dirty) fail(dirty.error.message, ExitCode.Usage);
  if (dirty.ok.length > 0)
    fail(
      `the working tree of ${found.ok.top} has uncommitted changes (${dirty.ok
        .slice(0, 3)
        .map((e) => e.trim())
        .join(
          ", ",
        )}${dirty.ok.length > 3 ? ", …" : ""}); a worker clones the repository at a commit, so they would not be in the run: commit or stash them, then submit. Nothing was queued.`,
      ExitCode.Usage,
    );
  return { source: found.ok.top, commit: found.ok.head };
}

/** submit's action sees its options untyped: it takes every option of run, which it passes on as given. */
type SubmitCommand = {
  action(fn: (objective: string, opts: Record<string, unknown>, cmd: Command) => Promise<void>): unknown;
};

export function addSubmit(submit: Command): void {
  (
    submit
      .option("--db <url>", DB_HELP)
      .option(
        "--priority <n>",
        "higher runs first (default 0)",
        wholeNumber("--priority", -1000, 1000),
        0,
      ) as unknown as SubmitCommand
  ).action(async (objective: string, opts: Record<string, unknown>, cmd: Command) => {
    const runId = (opts.runId as string | undefined) ?? generateRunId();
    const valid = validateRunId(runId);
    if ("error" in valid) fail(valid.error.message, ExitCode.Usage);
    const at = process.argv.lastIndexOf("submit");
    const given = process.argv.slice(at + 1);
    const repo = await submittedRepo(opts);
    // The worker adds -C (its clone of the repository) or --no-repo.
    const own = ["--db", "--priority", "--run-id", "-C", "--repo", "--no-repo", "--include-uncommitted"];
    const args = runArgsOf(cmd, given, own);
    // A run taken over is resumed: with what of its arguments resume takes (its models, tools, budgets).
    const resume = cmd.parent?.commands.find((c) => c.name() === "resume");
    const resumes = new Set(resume?.options.flatMap((o) => [o.long, o.short]).filter(Boolean));
    const resumeArgs = runArgsOf(cmd, given, own, (flag) => resumes.has(flag));
    const { fleet } = await openFleet(opts.db as string | undefined);
    const { submitRun } = await import("../../infty/fleet/index.ts");
    const submitter = whoAmI();
    const r = await submitRun(fleet, {
      id: runId,
      objective,
      args,
      resumeArgs,
      priority: opts.priority as number,
      submitter,
      cwd: process.cwd(),
      ...(repo ? { repo } : {}),
    });
    await fleet.close();
    if ("error" in r) fail(r.error.message, r.error.code === "run_exists" ? ExitCode.Usage : ExitCode.Failure);
    process.stdout.write(`${runId}\n`);
    const on = repo ? ` on ${repo.source}${repo.commit ? ` at ${repo.commit.slice(0, 12)}` : ""}` : " (no repository)";
    process.stderr.write(
      `queued ${runId}${on}; a worker drives it (relay infty worker --db …); see: relay infty list --db …\n`,
    );
  });
}

export function addWorker(infty: Command): void {
  infty
    .command("worker")
    .description(
      "drive runs from the fleet's queue, several at once, until stopped (SIGTERM or Ctrl-C: its runs are queued again)",
    )
    .option("--db <url>", DB_HELP)
    .option("--max-runs <n>", "runs this worker drives at once", wholeNumber("--max-runs", 1, 256), 2)
    .option("--name <name>", "this worker's name in the fleet (default: host-pid)")
    .option(
      "--runs-root <dir>",
      "where run stores live; every worker of the fleet must reach the same one (default: $RELAY_HOME/infty)",
    )
    .option("--poll <ms>", "how often an idle worker looks for work", wholeNumber("--poll", 50, 600_000), 2000)
    .option(
      "--per-submitter <n>",
      "runs one submitter may have running across the fleet; give every worker the same (default: no cap)",
      wholeNumber("--per-submitter", 1, 10_000),
    )
    .action(async (opts) => {
      const { fleet, url } = await openFleet(opts.db);
      const { runWorker, leaseTimeoutMs } = await import("../../infty/fleet/index.ts");
      const { LEASE_STALE_MS } = await import("../../infty/lease.ts");
      const ctrl = new AbortController();
      const stop = () => {
        if (!ctrl.signal.aborted)
          process.stderr.write("relay: worker stopping: its runs stop after their current step and are queued again\n");
        ctrl.abort();
      };
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
      const r = await runWorker({
        fleet,
        dbUrl: url,
        name: opts.name ?? `${os.hostname()}-${process.pid}`,
        maxRuns: opts.maxRuns,
        runsRoot: path.resolve(opts.runsRoot ?? RunStore.runsRoot(relayHome())),
        pollMs: opts.poll,
        staleMs: leaseTimeoutMs() ?? LEASE_STALE_MS,
        perSubmitter: opts.perSubmitter,
        signal: ctrl.signal,
        say: (line) => process.stderr.write(`${line}\n`),
      });
      await fleet.close();
      if ("error" in r) fail(r.error.message, r.error.code === "worker_live" ? ExitCode.Usage : ExitCode.Failure);
    });
}

export function addWorkers(infty: Command): void {
  infty
    .command("workers")
    .description("list the fleet's workers: host, pid, runs, last heartbeat")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (opts) => {
      const { fleet } = await openFleet(opts.db);
      const { listWorkers } = await import("../../infty/fleet/index.ts");
      const r = await listWorkers(fleet);
      await fleet.close();
      if ("error" in r) fail(r.error.message, ExitCode.Failure);
      if (opts.json) return void process.stdout.write(JSON.stringify(r.ok) + "\n");
      if (r.ok.length === 0)
        return void process.stderr.write("no workers yet; start one with: relay infty worker --db …\n");
      const rows = r.ok.map((w) => ({
        cells: [
          w.name,
          w.host,
          String(w.pid),
          `${w.runs}/${w.max_runs}`,
          w.stopped ? "stopped" : `${w.heartbeat_age_s} s ago`,
        ],
        text: w.started_at,
      }));
      process.stdout.write(
        alignRows(rows, outputWidth(process.stdout), {
          cells: ["WORKER", "HOST", "PID", "RUNS", "HEARTBEAT"],
          text: "STARTED",
        }).join("\n") + "\n",
      );
    });
}

/** `relay infty list --db`: every run of the fleet with its worker, state and lease age. */
export async function listFleet(flag: string | undefined, json: boolean): Promise<void> {
  const { fleet } = await openFleet(flag);
  const { listRuns } = await import("../../infty/fleet/index.ts");
  const r = await listRuns(fleet);
  await fleet.close();
  if ("error" in r) fail(r.error.message, ExitCode.Failure);
  if (json) return void process.stdout.write(JSON.stringify(r.ok) + "\n");
  if (r.ok.length === 0)
    return void process.stderr.write(
      'no runs in the fleet yet; queue one with: relay infty submit "objective" --db …\n',
    );
  const rows = r.ok.map((run) => ({
    cells: [
      run.id,
      run.state,
      run.worker ?? "-",
      run.lease && !run.lease.released ? `${run.lease.heartbeat_age_s} s (epoch ${run.lease.epoch})` : "-",
    ],
    text: run.objective.split("\n")[0]!,
  }));
  process.stdout.write(
    alignRows(rows, outputWidth(process.stdout), {
      cells: ["RUN", "STATE", "WORKER", "LEASE"],
      text: "OBJECTIVE",
    }).join("\n") + "\n",
  );
}

/**
 * `relay infty stop/note` with a fleet DB (--db, RELAY_INFTY_DB or [infty] db): the request goes
 * through the DB to the run's driver wherever it runs. Undefined when there is no fleet DB or the
 * fleet has no run `ref` (then the run is looked for on this host).
 */
export async function askFleet(
  flag: string | undefined,
  ref: string,
  ask: (fleet: FleetDb, runId: string, from: string) => Promise<Result<{ message: string } | undefined>>,
): Promise<Result<{ message: string }> | undefined> {
  if ("error" in validateRunId(ref)) return undefined;
  const url = await fleetUrl(flag);
  if (!url) return undefined;
  const { fleet } = await openFleet(url);
  try {
    const r = await ask(fleet, ref, whoAmI());
    if ("error" in r) return r;
    return r.ok ? { ok: r.ok } : undefined;
  } finally {
    await fleet.close();
  }
}

export function addRequeue(infty: Command): void {
  infty
    .command("requeue")
    .description("queue a fleet run that stopped, failed or was parked again; the next free worker resumes it")
    .argument("<run-id>", "the fleet run's id")
    .option("--db <url>", DB_HELP)
    .action(async (ref, opts) => {
      const valid = validateRunId(ref);
      if ("error" in valid) fail(valid.error.message, ExitCode.Usage);
      const { fleet } = await openFleet(opts.db);
      const { requeueRun } = await import("../../infty/fleet/index.ts");
      const r = await requeueRun(fleet, ref, `relay infty requeue by ${whoAmI()}`);
      await fleet.close();
      if ("error" in r) fail(r.error.message, r.error.code === "conflict" ? ExitCode.Usage : ExitCode.Failure);
      if (!r.ok) fail(`the fleet has no run ${ref}; see: relay infty list --db …`, ExitCode.Usage);
      process.stdout.write(`${r.ok.message}\n`);
    });
}
