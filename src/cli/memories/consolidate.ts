/**
 * `relay memories consolidate`: the two-phase memory pipeline over session rollouts, and its
 * report. Exit codes (safe from cron): 0 ran (including "no changes"); 1 a phase failed; 2 bad
 * usage, config or state DB; 3 phase 2 did not run: another run holds the lock, success
 * cooldown, or retry backoff after a failure (try later).
 */

import path from "node:path";
import { Command, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { loadConfig, type RelayConfig } from "../../config/config.ts";
import { type ClaimsCapped, claimsCapped, type MemorySettings, parseMemorySettings } from "../../config/memories.ts";
import { memoriesDir, relayHome } from "../../home/home.ts";
import { buildEngines, type Engines } from "../../memories/engines.ts";
import { type ConsolidateReport, consolidateMemories, leaseLines, summaryLine } from "../../memories/pipeline.ts";
import { skipDetailLines } from "../../memories/skips.ts";
import { runStartupPass } from "../../memories/startup-pass.ts";
import { DEFAULT_SOURCES, KNOWN_SOURCES, parseSources } from "../../rollout/sources.ts";
import { wholeNumber } from "../number-flag.ts";
import { ExitCode, fail, warn } from "../usage.ts";
import { DB_HELP, openDb } from "./state-db.ts";

export const MemoriesExit = { Ok: 0, Failure: 1, Usage: 2, Skipped: 3 } as const;

const int = (name: string) => wholeNumber(name, 0);

const sourcesArg = (v: string) => {
  const r = parseSources(v);
  if ("error" in r) throw new InvalidArgumentError(r.error.message);
  return r.ok;
};

export function consolidateCommand() {
  return consolidateOptions().addHelpText("after", CONSOLIDATE_HELP).action(consolidateAction);
}

function consolidateOptions() {
  return (
    new Command("consolidate")
      .description(
        "extract memories from recent idle rollouts (phase 1) and consolidate them into $RELAY_HOME/memories (phase 2)",
      )
      .option("--db <url>", DB_HELP)
      .option(
        "--codex-home <dir>",
        "also read Codex sessions from <dir>/sessions (read only: nothing in <dir> is written)",
      )
      .option(
        "--sources <list>",
        `session sources phase 1 reads, a comma list of ${KNOWN_SOURCES.join(", ")}, or all (config: [memories] sources; default: ${DEFAULT_SOURCES.join(",")})`,
        sourcesArg,
      )
      .addOption(
        new Option(
          "--extractor <kind>",
          "phase 1: model (structured JSON reply), heuristic (offline, no model), or auto: model when one is usable (see below); default: [memories] extractor, else auto",
        ).choices(["auto", "model", "heuristic"] as const),
      )
      .addOption(
        new Option(
          "--consolidator <kind>",
          "phase 2: agent (a locked-down relay sub-session), heuristic (offline), or auto: agent when a model is usable; default: [memories] consolidator, else auto",
        ).choices(["auto", "agent", "heuristic"] as const),
      )
      .option(
        "-m, --model <name>",
        "model for both phases (config: [memories] extract_model / consolidation_model, then model)",
      )
      .option("--script <file>", "SCRIPTED consolidation agent (offline tests)")
      .option("--extract-script <file>", "SCRIPTED extractor: each turn's text is one JSON reply (offline tests)")
      .option(
        "--max-rollouts <n>",
        "rollouts claimed this run, at most [memories] max_running_jobs (config: [memories] max_rollouts_per_run)",
        int("--max-rollouts"),
      )
      .option(
        "--min-idle-hours <n>",
        "a rollout must be idle this long (config: [memories] min_rollout_idle_hours)",
        int("--min-idle-hours"),
      )
      .option(
        "--max-age-days <n>",
        "ignore rollouts older than this (config: [memories] max_rollout_age_days)",
        int("--max-age-days"),
      )
      .option("--skip-phase1", "only consolidate what phase 1 already stored")
      .option("--skip-phase2", "only extract (phase 1): for hosts that share a Postgres DB but not the memory folder")
      .option("--json", "print the report as one JSON object instead of one line")
      // Internal: the background pass `relay run` starts (src/memories/startup.ts).
      .addOption(new Option("--startup <json>").hideHelp())
  );
}

type ConsolidateOpts = ReturnType<ReturnType<typeof consolidateOptions>["opts"]>;

/** The engines: flags, then `[memories] extractor` / `consolidator`; `auto` picks the model ones when a model is usable. */
function engines(opts: ConsolidateOpts, settings: MemorySettings, home: string, base: RelayConfig): Engines {
  const r = buildEngines(home, base, settings, {
    extractor: opts.extractor ?? settings.extractor,
    consolidator: opts.consolidator ?? settings.consolidator,
    model: opts.model,
    script: opts.script,
    extractScript: opts.extractScript,
  });
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

/** Flags over the [memories] settings. */
function applySettingFlags(settings: MemorySettings, opts: ConsolidateOpts): MemorySettings {
  if (opts.maxRollouts !== undefined) settings.max_rollouts_per_run = Math.max(1, opts.maxRollouts);
  if (opts.minIdleHours !== undefined) settings.min_rollout_idle_hours = opts.minIdleHours;
  if (opts.maxAgeDays !== undefined) settings.max_rollout_age_days = opts.maxAgeDays;
  return settings;
}

async function consolidateAction(opts: ConsolidateOpts): Promise<void> {
  const home = relayHome();
  if (opts.startup !== undefined) process.exit(await runStartupPass(home, opts.startup));
  const loaded = await loadConfig(home);
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  // Its warnings include [memories]'s unknown keys; the section is taken from the same read.
  warn(loaded.ok.warnings);
  if (opts.skipPhase1 && opts.skipPhase2) fail("--skip-phase1 and --skip-phase2 leave nothing to do", ExitCode.Usage);
  const section = parseMemorySettings(loaded.ok.config.memories ?? {}, loaded.ok.path);
  if ("error" in section) fail(section.error.message, ExitCode.Usage);
  const settings = applySettingFlags(section.ok, opts);
  // Asked on the command line only: a config below the cap's default is the summary line's to explain.
  const capped = opts.maxRollouts === undefined || opts.skipPhase1 ? undefined : claimsCapped(settings);
  if (capped) process.stderr.write(`${stamp()}${cappedLine(capped)}\n`);
  const { extractor, consolidator, extractorKind, consolidatorKind } = engines(opts, settings, home, loaded.ok.config);
  const kinds = {
    extractor: extractorKind,
    consolidator: consolidatorKind,
    auto: (opts.extractor ?? settings.extractor) === "auto",
  };
  const state = await openDb(opts.db, home, settings);
  const ctrl = new AbortController();
  process.once("SIGINT", () => ctrl.abort());
  try {
    const r = await consolidateMemories({
      state,
      relayHome: home,
      memoriesRoot: memoriesDir(home),
      codexHome: opts.codexHome ? path.resolve(opts.codexHome) : undefined,
      sources: opts.sources,
      settings,
      extractor,
      consolidator,
      skipPhase1: opts.skipPhase1,
      skipPhase2: opts.skipPhase2,
      signal: ctrl.signal,
    });
    if ("error" in r) {
      if (opts.json) process.stdout.write(JSON.stringify({ ok: false, error: r.error }) + "\n");
      fail(
        r.error.message,
        r.error.code === "db_corrupt" || r.error.code === "db_error" ? ExitCode.Usage : ExitCode.Failure,
      );
    }
    process.exitCode = reportConsolidation(r.ok, opts, kinds, capped);
  } finally {
    await state.close();
  }
}

/** `--max-rollouts 300 is above ...`: why this run claims fewer than asked for. */
function cappedLine(c: ClaimsCapped): string {
  return `--max-rollouts ${c.max_rollouts} is above the claim cap (max_running_jobs ${c.max_running_jobs}): this run claims at most ${c.max_running_jobs} rollouts; raise [memories] max_running_jobs in config.toml to claim more`;
}

/** A report line's start: when (a cron log is read days later) and who. */
const stamp = () => `${new Date().toISOString()} relay memories: `;

/** Prints the run's report and returns its exit code. */
function reportConsolidation(
  rep: ConsolidateReport,
  opts: ConsolidateOpts,
  kinds: { extractor: string; consolidator: string; auto: boolean },
  capped: ClaimsCapped | undefined,
): number {
  // Taken-over and respected leases, on stderr: stdout keeps its one summary line (or JSON).
  for (const line of leaseLines(rep)) process.stderr.write(`${stamp()}${line}\n`);
  // Rollouts that could not be read, with file:line; the counts by reason are in the summary line.
  if (rep.phase1 && !opts.json)
    for (const line of skipDetailLines(rep.phase1.skipped)) process.stderr.write(`${stamp()}${line}\n`);
  const p1failed = rep.phase1?.outcomes.some((x) => x.status === "failed") ?? false;
  const p2 = rep.phase2?.status;
  const code =
    p2 === "failed" || p1failed
      ? MemoriesExit.Failure
      : p2?.startsWith("skipped_")
        ? MemoriesExit.Skipped
        : MemoriesExit.Ok;
  const cap = capped ? { max_rollouts_capped: capped } : {};
  if (opts.json)
    process.stdout.write(
      JSON.stringify({
        ok: code === 0,
        exit_code: code,
        extractor: kinds.extractor,
        consolidator: kinds.consolidator,
        ...cap,
        ...rep,
      }) + "\n",
    );
  else {
    const offline = kinds.extractor === "heuristic" && kinds.consolidator === "heuristic" && kinds.auto;
    process.stdout.write(
      `${stamp()}${summaryLine(rep)}${offline ? " (offline: no API key or model server configured)" : ""}\n`,
    );
  }
  return code;
}

const CONSOLIDATE_HELP = `
Sources (--sources): by default only sessions a person drove are read, cli and vscode (IDE and
app-server clients), as in Codex's own memories pipeline: exec runs are scripted and repeat the
same prompt, sub-agent work is already in its parent's rollout. Add them with e.g.
--sources cli,vscode,exec or --sources all. Relay's own consolidation runs are never read.
Skipped rollouts are counted by reason on the summary line (too recent, too old, no user turn,
parse error, unreadable, source filtered, already extracted, held by another worker, claim cap
reached, ...); parse errors are listed on stderr as file:line. A run's claims count as running
until it ends, so one run claims at most [memories] max_running_jobs (default 16) rollouts: the
rest are counted as "claim cap N reached (max_running_jobs)", and a --max-rollouts above the cap
says so on stderr (--json: max_rollouts_capped). --json: phase1.skipped = {total, by_reason, sources, parse_errors,
unreadable}. --codex-home only reads <dir>: no file there is written, renamed or touched.

A model is usable when the provider is scripted, the base URL is not api.openai.com (a local
server), or the API key variable (config api_key_env, default OPENAI_API_KEY) is set. Otherwise
auto runs offline, so cron works without a key.

Exit codes: 0 ran (also when nothing changed); 1 a phase failed; 2 bad usage, config or state DB;
3 phase 2 skipped: another run holds the lock, cooldown, or retry backoff (try later).

Leases: a run holds the phase 2 lock and its phase 1 claims for up to 1 h, renewing them every
30 s. A holder that is gone (same host and its process has exited, checked by pid and process
start time; or a heartbeat older than 5 min) is taken over at once, with a line on stderr.
A live holder keeps them; the summary line says who holds the lock and since when.

To run it every 30 minutes: relay memories schedule (a systemd user timer or a crontab entry;
--print shows it first). See relay memories schedule --help for the line it runs.`;
