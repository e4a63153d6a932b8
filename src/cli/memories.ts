/**
 * `relay memories`: the two-phase memory pipeline over session rollouts.
 * Exit codes of `consolidate` (safe from cron): 0 ran (including "no changes"); 1 a phase failed;
 * 2 bad usage, config or state DB; 3 phase 2 did not run: another run holds the lock, success
 * cooldown, or retry backoff after a failure (try later).
 */

import { readFile } from "node:fs/promises";
import path from "node:path";
import { Command, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { loadConfig, type RelayConfig } from "../config/config.ts";
import { memoriesDir, relayHome } from "../home/home.ts";
import { buildEngines, type Engines } from "../memories/engines.ts";
import { type HolderReport, holderName, holderReport, holderSince } from "../memories/holder.ts";
import { type ConsolidateReport, consolidateMemories, leaseLines, summaryLine } from "../memories/pipeline.ts";
import {
  type ClaimsCapped,
  claimsCapped,
  loadMemorySettings,
  type MemorySettings,
  stateDbSpec,
} from "../memories/settings.ts";
import { skipDetailLines } from "../memories/skips.ts";
import { DEFAULT_SOURCES, KNOWN_SOURCES, parseSources } from "../memories/sources.ts";
import { runStartupPass } from "../memories/startup-pass.ts";
import { SUMMARIES_DIR, stemOf } from "../memories/storage.ts";
import {
  forgetThread,
  getOutput,
  getThread,
  listLeases,
  listOutputs,
  openStateDb,
  PHASE2_KIND,
  readPhase2Job,
  type StateDb,
  statusCounts,
} from "../memories/store/index.ts";
import { scheduleCommand } from "./memories-schedule.ts";
import { wholeNumber } from "./number-flag.ts";
import { alignRows, outputWidth } from "./session-format.ts";
import { ExitCode, fail } from "./usage.ts";

export const MemoriesExit = { Ok: 0, Failure: 1, Usage: 2, Skipped: 3 } as const;

const int = (name: string) => wholeNumber(name, 0);

const sourcesArg = (v: string) => {
  const r = parseSources(v);
  if ("error" in r) throw new InvalidArgumentError(r.error.message);
  return r.ok;
};

const DB_HELP =
  "state DB: a postgres:// URL or a SQLite file (default: $RELAY_MEMORIES_DB, then [memories] db, then $RELAY_HOME/state.sqlite)";

async function openDb(spec: string | undefined, home: string): Promise<StateDb> {
  const r = await openStateDb(stateDbSpec(home, await settingsFor(home), spec));
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

async function settingsFor(home: string): Promise<MemorySettings> {
  const r = await loadMemorySettings(home);
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}

function consolidateCommand() {
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
  if (opts.skipPhase1 && opts.skipPhase2) fail("--skip-phase1 and --skip-phase2 leave nothing to do", ExitCode.Usage);
  const settings = applySettingFlags(await settingsFor(home), opts);
  // Asked on the command line only: a config below the cap's default is the summary line's to explain.
  const capped = opts.maxRollouts === undefined || opts.skipPhase1 ? undefined : claimsCapped(settings);
  if (capped) process.stderr.write(`${stamp()}${cappedLine(capped)}\n`);
  const { extractor, consolidator, extractorKind, consolidatorKind } = engines(opts, settings, home, loaded.ok.config);
  const kinds = {
    extractor: extractorKind,
    consolidator: consolidatorKind,
    auto: (opts.extractor ?? settings.extractor) === "auto",
  };
  const state = await openDb(opts.db, home);
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

const LEASE_STATE: Record<HolderReport["state"], string> = {
  alive: "running",
  gone: "gone: the next consolidate takes it over",
  unknown: "not checkable from this host: kept until its heartbeat is 5 min old or its lease ends",
};

/** `leases held: 1` and one line per lease: who, since when, heartbeat age, and what happens next. */
function leaseText(leases: Array<HolderReport & { scope: string; key: string }>): string {
  const lines = leases.map(
    (l) =>
      `  ${l.scope === "phase2" ? "phase 2 lock" : `phase 1 claim ${l.key}`}: ${holderName(l)} ${holderSince(l)} (${LEASE_STATE[l.state]})`,
  );
  return `leases held: ${leases.length || "none"}\n${lines.map((l) => `${l}\n`).join("")}`;
}

export function memoriesCommand() {
  const memories = new Command("memories")
    .description("the two-phase memory pipeline over session rollouts")
    .addHelpText(
      "after",
      `
Files: $RELAY_HOME/memories/ holds MEMORY.md (handbook), memory_summary.md (injected into new
sessions; relay run --no-memories turns that off), raw_memories.md and rollout_summaries/ (inputs),
and .git (the baseline of the last consolidation). The state DB holds jobs and stored memories.

Exit codes: 0 ok; 1 failed (or show: no such memory); 2 bad usage, config or state DB;
3 consolidate skipped phase 2 (lock held, cooldown or backoff). See docs/memories.md.`,
    );
  memories.addCommand(consolidateCommand());
  memories.addCommand(scheduleCommand());
  addStatus(memories);
  addList(memories);
  addShow(memories);
  addForget(memories);
  return memories;
}

function addStatus(memories: Command) {
  memories
    .command("status")
    .description("counts of rollouts, memories and jobs, and the last consolidation")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (opts) => {
      const home = relayHome();
      const state = await openDb(opts.db, home);
      try {
        const counts = await statusCounts(state);
        if ("error" in counts) fail(counts.error.message, ExitCode.Usage);
        const job = await readPhase2Job(state);
        if ("error" in job) fail(job.error.message, ExitCode.Usage);
        const now = Math.floor(Date.now() / 1000);
        const held = await listLeases(state, now);
        if ("error" in held) fail(held.error.message, ExitCode.Usage);
        const j = job.ok;
        const leases = held.ok.map((l) => ({
          scope: l.kind === PHASE2_KIND ? "phase2" : "phase1",
          key: l.job_key,
          ...holderReport(l, now),
        }));
        const out = {
          db: state.location,
          memories_dir: memoriesDir(home),
          ...counts.ok,
          phase2: j
            ? {
                status: j.status,
                finished_at: j.finished_at,
                last_error: j.last_error,
                last_success_watermark: j.last_success_watermark,
                input_watermark: j.input_watermark,
              }
            : null,
          leases,
        };
        if (opts.json) process.stdout.write(JSON.stringify(out) + "\n");
        else {
          const jobs =
            Object.entries(out.jobs)
              .map(([k, v]) => `${k}=${v}`)
              .join(" ") || "none";
          const p2 = j
            ? `${j.status}${j.finished_at ? ` at ${new Date(j.finished_at * 1000).toISOString()}` : ""}${j.last_error ? ` (${j.last_error})` : ""}`
            : "never run";
          process.stdout.write(
            `state DB: ${out.db}\nmemory folder: ${out.memories_dir}\nrollouts seen: ${out.threads}\nmemories: ${out.outputs}\nphase 1 jobs: ${jobs}\nlast consolidation: ${p2}\n${leaseText(leases)}`,
          );
        }
      } finally {
        await state.close();
      }
    });
}

function addList(memories: Command) {
  memories
    .command("list")
    .description("stored memories, newest first")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON lines")
    .action(async (opts) => {
      const state = await openDb(opts.db, relayHome());
      try {
        const rows = await listOutputs(state);
        if ("error" in rows) fail(rows.error.message, ExitCode.Usage);
        if (opts.json) for (const r of rows.ok) process.stdout.write(JSON.stringify(r) + "\n");
        else if (rows.ok.length === 0) process.stdout.write("no memories yet: run relay memories consolidate\n");
        else process.stdout.write(memoryTable(rows.ok).join("\n") + "\n");
      } finally {
        await state.close();
      }
    });
}

function addShow(memories: Command) {
  memories
    .command("show")
    .description("one memory: its raw memory and rollout summary")
    .argument("<session>", "last (the newest memory), a session id, or a unique prefix of one")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (ref, opts) => {
      const home = relayHome();
      const state = await openDb(opts.db, home);
      try {
        const id = await memoryId(state, ref, false);
        const r = await getOutput(state, id);
        if ("error" in r) fail(r.error.message, ExitCode.Usage);
        if (!r.ok) fail(`no memory for session ${id} (see relay memories list)`, ExitCode.Failure);
        const th = await getThread(state, id);
        if ("error" in th) fail(th.error.message, ExitCode.Usage);
        if (opts.json) {
          process.stdout.write(JSON.stringify({ ...r.ok, thread: th.ok ?? null }) + "\n");
          return;
        }
        const file = th.ok
          ? path.join(memoriesDir(home), SUMMARIES_DIR, `${stemOf({ ...r.ok, thread: th.ok })}.md`)
          : undefined;
        let onDisk = "";
        if (file)
          onDisk = await readFile(file, "utf8").then(
            () => `\nsummary file: ${file}`,
            () => "",
          );
        process.stdout.write(
          `session: ${id}\nrollout: ${th.ok?.rollout_path ?? "?"}\ncwd: ${th.ok?.cwd ?? "?"}\nused: ${r.ok.usage_count ?? 0}${onDisk}\n\n## Raw memory\n${r.ok.raw_memory.trim()}\n\n## Rollout summary\n${r.ok.rollout_summary.trim()}\n`,
        );
      } finally {
        await state.close();
      }
    });
}

function addForget(memories: Command) {
  memories
    .command("forget")
    .description(
      "forget one session: drop its memory and never extract it again; the next consolidate removes it from the memory folder",
    )
    .argument("<session>", "last (the newest memory), a session id, or a unique prefix of a stored one")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (ref, opts) => {
      const state = await openDb(opts.db, relayHome());
      try {
        // A full id with no memory yet is forgotten too: it will never be extracted.
        const id = await memoryId(state, ref, true);
        const r = await forgetThread(state, id, Math.floor(Date.now() / 1000));
        if ("error" in r) fail(r.error.message, ExitCode.Usage);
        if (opts.json) process.stdout.write(JSON.stringify({ thread_id: id, had_memory: r.ok }) + "\n");
        else
          process.stdout.write(
            r.ok
              ? `forgot ${id}; run relay memories consolidate to update the memory folder\n`
              : `nothing stored for ${id}; it will not be extracted\n`,
          );
      } finally {
        await state.close();
      }
    });
}

/**
 * The session a `show`/`forget` argument names: `last` is the newest memory, else an id or a
 * unique prefix of a stored one. `anyId` takes an unknown argument as an id (forget).
 */
async function memoryId(state: StateDb, ref: string, anyId: boolean): Promise<string> {
  const rows = await listOutputs(state);
  if ("error" in rows) fail(rows.error.message, ExitCode.Usage);
  if (ref === "last") {
    const newest = rows.ok[0];
    if (!newest) fail("there are no memories yet, so no last one: run relay memories consolidate", ExitCode.Failure);
    return newest.thread_id;
  }
  const ids = rows.ok.map((r) => r.thread_id);
  if (ids.includes(ref)) return ref;
  const matches = ids.filter((id) => id.startsWith(ref));
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1)
    fail(
      `${ref} is the start of ${matches.length} sessions' ids (${matches.slice(0, 3).join(", ")}${matches.length > 3 ? ", …" : ""}); give more of it`,
      ExitCode.Usage,
    );
  if (anyId) return ref;
  fail(`no memory for session ${ref} (see relay memories list)`, ExitCode.Failure);
}

/** `memories list` for people: one row a memory, under a header. */
function memoryTable(
  rows: Array<{
    thread_id: string;
    source_updated_at: number;
    usage_count?: number | null;
    selected_for_phase2?: boolean | number | null;
    rollout_summary: string;
  }>,
): string[] {
  const cells = rows.map((r) => ({
    cells: [
      r.thread_id,
      new Date(r.source_updated_at * 1000).toISOString().slice(0, 16),
      String(r.usage_count ?? 0),
      r.selected_for_phase2 ? "yes" : "no",
    ],
    text:
      r.rollout_summary
        .split("\n")
        .find((l) => l.trim())
        ?.replace(/^#+\s*/, "") ?? "",
  }));
  return alignRows(cells, outputWidth(process.stdout), {
    cells: ["SESSION", "UPDATED", "USED", "IN MEMORY.md"],
    text: "SUMMARY",
  });
}
