import { Command, Option } from "@commander-js/extra-typings";
import { SandboxModeSchema } from "../executor/sandbox/policy.ts";
import { SandboxMechanismSchema } from "../executor/sandbox/policy.ts";
import { ModelProviderSchema } from "../model/factory.ts";
import { sessionMemories } from "../memories/read.ts";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { runInfty, scriptedModels, type InftyEvent, type InftyOptions } from "../infty/orchestrator.ts";
import { RunStore, validateRunId, type RunMeta } from "../infty/run-store.ts";
import { applyOverrides, loadConfig, type ConfigOverrides, type RelayConfig } from "../session/config.ts";
import { checkCredentials } from "../session/preflight.ts";
import { mergeOverrides } from "../session/resume-settings.ts";
import { relayHome } from "../home/home.ts";
import { ExitCode, fail } from "./usage.ts";
import { addCheckpoints, addRestore } from "./infty-checkpoints.ts";

interface ModelFlags {
  model?: string;
  provider?: "openai-responses" | "openai-chat" | "scripted";
  baseUrl?: string;
  script?: string;
  sandbox?: "read-only" | "workspace-write" | "danger-full-access";
  sandboxMechanism?: "auto" | "landlock" | "bwrap";
  sandboxBestEffort?: boolean;
  failOnToolError?: boolean;
  json?: boolean;
}

function modelOptions<T extends Command<any, any, any>>(cmd: T): T {
  return cmd
    .option("-m, --model <name>", "model for every role (config: model)")
    .addOption(new Option("--provider <provider>", "model API (config: model_provider)").choices(ModelProviderSchema.options))
    .option("--base-url <url>", "API base URL (config: base_url)")
    .option("--script <file>", "SCRIPTED models: replay each role's turns from a JSON file {solver, director, verifiers[]} (offline demos and tests)")
    .addOption(new Option("-s, --sandbox <mode>", "sandbox for the roles' commands (default: config sandbox_mode)").choices(SandboxModeSchema.options))
    .addOption(new Option("--sandbox-mechanism <mechanism>", "auto (built-in Landlock + seccomp, else bubblewrap), landlock or bwrap (config: sandbox.mechanism)").choices(SandboxMechanismSchema.options))
    .option("--sandbox-best-effort", "run with weaker enforcement where the kernel lacks a sandbox feature (config: sandbox.best_effort)")
    .option("--fail-on-tool-error", "end the run (failed, resumable) at the first failed tool call of any role, naming it; for scripted demos and CI")
    .option("--json", "print one JSON event per line on stdout instead of progress lines") as T;
}

/** Configuration, then what a resumed run recorded, then the flags. */
async function configFor(flags: ModelFlags, recorded?: RunMeta["settings"]): Promise<{ config: RelayConfig; modelFor?: InftyOptions["modelFor"] }> {
  const home = relayHome();
  const loaded = await loadConfig(home);
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  const fromRun: ConfigOverrides = recorded
    ? {
        model: recorded.model,
        provider: recorded.model_provider,
        base_url: recorded.base_url,
        api_key_env: recorded.api_key_env,
        sandbox_mode: recorded.sandbox_mode,
        sandbox_mechanism: recorded.sandbox_mechanism,
        sandbox_best_effort: recorded.sandbox_best_effort,
        approval_policy: recorded.approval_policy,
        reasoning_effort: recorded.model_reasoning_effort,
        reasoning_summary: recorded.model_reasoning_summary,
        executor: recorded.executor,
      }
    : {};
  const fromFlags = { model: flags.model ?? (flags.script ? "scripted" : undefined), provider: flags.provider, base_url: flags.baseUrl, sandbox_mode: flags.sandbox, sandbox_mechanism: flags.sandboxMechanism, sandbox_best_effort: flags.sandboxBestEffort };
  const config = applyOverrides(loaded.ok.config, mergeOverrides(fromRun, fromFlags));
  if ("error" in config) fail(config.error.message, ExitCode.Usage);
  if (!flags.script) {
    // Before the run directory exists: a run that cannot start leaves nothing behind.
    const creds = checkCredentials(config.ok, process.env);
    if ("error" in creds) fail(creds.error.message, ExitCode.Usage);
    return { config: config.ok };
  }
  if (!existsSync(flags.script)) fail(`script file not found: ${flags.script}`, ExitCode.Usage);
  const models = scriptedModels(readFileSync(flags.script, "utf8"), flags.script);
  if ("error" in models) fail(models.error.message, ExitCode.Usage);
  return { config: config.ok, modelFor: models.ok };
}

function reporter(json: boolean): (e: InftyEvent) => void {
  if (json) return (e) => process.stdout.write(JSON.stringify(e) + "\n");
  const tag = (id: string) => `[infty ${id}]`;
  let runId = "";
  return (e) => {
    const w = (s: string) => process.stderr.write(`${tag(runId)} ${s}\n`);
    switch (e.type) {
      case "run_started":
        runId = e.run_id;
        w(`${e.resumed ? "resumed" : "started"} in ${e.dir}`);
        return;
      case "role_event":
        if (e.event.type === "tool_call") w(`${e.role} ▸ ${e.event.name}: ${e.event.display.split("\n")[0]!.slice(0, 120)}`);
        else if (e.event.type === "tool_result") w(`${e.role} ✗ ${e.event.name}: ${(e.event.output.split("\n").find((l) => l.trim()) ?? "").slice(0, 300)}`);
        else if (e.event.type === "warning" || e.event.type === "error") w(`${e.role}: ${e.event.message}`);
        else if (e.event.type === "context_compacted") w(`${e.role}: context compacted`);
        return;
      case "handoff":
        w(`${e.from} → ${e.to}: ${e.summary}`);
        return;
      case "verdict":
        w(`${e.role}: ${e.verdict}${e.reasons.length ? ` (${e.reasons[0]})` : ""}`);
        return;
      case "verification_summary":
        w(`verification ${e.overall}: ${e.passes}/${e.total} passed`);
        return;
      case "checkpoint":
        w(`checkpoint ${e.name} (${e.trigger})`);
        return;
      case "heartbeat":
        w(`… turn ${e.turns}/${e.max_turns}, ${Math.round(e.elapsed_ms / 1000)}s, ${e.last_activity}`);
        return;
      case "warning":
        w(`warning: ${e.message}`);
        return;
      case "run_finished":
        w(`${e.status}: ${e.detail}`);
        if (e.deliverable) process.stdout.write(`${e.deliverable}\n`);
        return;
    }
  };
}

/** The run id's own errors come before any about models or keys: they are the more specific. */
async function checkRunId(o: { runId?: string; resume?: boolean }): Promise<RunMeta["settings"]> {
  if (o.runId === undefined) return undefined;
  const id = validateRunId(o.runId);
  if ("error" in id) fail(id.error.message, ExitCode.Usage);
  if (!o.resume) return undefined;
  // A resume finishes a creation that a crash cut short, or says what was lost (exit 2).
  const found = await RunStore.load(relayHome(), o.runId, { recover: true });
  if ("error" in found) fail(found.error.message, ExitCode.Usage);
  return found.ok.state.settings;
}

async function drive(o: Omit<InftyOptions, "report" | "signal" | "home" | "config">, flags: ModelFlags): Promise<never> {
  const recorded = await checkRunId(o);
  const { config, modelFor } = await configFor(flags, recorded);
  const ctrl = new AbortController();
  let presses = 0;
  process.on("SIGINT", () => {
    if (++presses > 1) process.exit(ExitCode.Interrupted);
    process.stderr.write("relay: stopping after the current step; the run stays resumable (Ctrl-C again to quit now)\n");
    ctrl.abort();
  });
  process.on("SIGTERM", () => ctrl.abort());
  const r = await runInfty({ ...o, home: relayHome(), config, modelFor, report: reporter(Boolean(flags.json)), signal: ctrl.signal, failOnToolError: Boolean(flags.failOnToolError), memories: sessionMemories });
  if ("error" in r) {
    const usage = ["usage", "run_not_found", "run_not_created", "run_exists"].includes(r.error.code) || r.error.code.startsWith("invalid");
    fail(r.error.message, usage ? ExitCode.Usage : ExitCode.Failure);
  }
  const code = r.ok.status === "complete" ? ExitCode.Ok : r.ok.status === "interrupted" ? ExitCode.Interrupted : ExitCode.Failure;
  process.exit(code);
}

/** A whole-number flag of at least `min` (budgets and intervals: 1; counts: 0). */
const positiveInt = (name: string, min = 1) => (v: string) => {
  const n = Number(v);
  if (!/^\s*\d+\s*$/.test(v) || !Number.isSafeInteger(n)) fail(`${name} must be a whole number (got ${v})`, ExitCode.Usage);
  if (n < min) fail(`${name} must be at least ${min} (got ${v})`, ExitCode.Usage);
  return n;
};

export function inftyCommand() {
  const infty = new Command("infty")
    .description("long-running Solver / Director / Verifier runs with a durable run store, checkpoints and resume")
    .addHelpText(
      "after",
      `
A run lives in $RELAY_HOME/infty/<run-id>/: artifacts/, memory/ (notes.jsonl, claims/,
verifications.jsonl), index/ (claims.json and artifacts.json kept by the orchestrator),
deliverable/, run.json (state), events.jsonl (log) and .checkpoints.git (a checkpoint after every
handoff: \`relay infty checkpoints <id>\`; rewind with \`relay infty restore <id> <checkpoint>\`).
The Solver works autonomously; it asks the Director for direction and the Verifiers for
verification through JSON signals; after a passing verification it builds deliverable/
with a README.md manifest that the orchestrator checks against the files.

Every change of run.json is one atomic write, so a crash (even SIGKILL) at any point is resumable:
\`relay infty resume <id>\` goes on from the step that was cut off and never asks a role again for an
answer its session already recorded. Resuming a complete run checks its deliverable again (exit 0).

Exit codes: 0 complete; 1 failed or budget used up (resumable); 2 bad usage, or a run that was never
created (the message gives the command to start over); 130 interrupted (resumable).`,
    );
  addRun(infty);
  addResume(infty);
  addStatus(infty);
  addList(infty);
  addLogs(infty);
  addCheckpoints(infty);
  addRestore(infty);
  return infty;
}

type Parent = Command;

function addRun(infty: Parent) {
  modelOptions(
    infty
      .command("run")
      .description("start a run for an objective and drive it to a verified deliverable")
      .argument("<objective>", "what the run must achieve")
      .option("--verifiers <n>", "number of Verifier sessions", positiveInt("--verifiers", 0), 1)
      .addOption(new Option("--consensus <rule>", "how verdicts combine").choices(["all", "majority"] as const).default("all" as const))
      .option("--run-id <id>", "name of the run (default: run-<UTC time>-<random>)")
      .option("--max-turns <n>", "Solver turns allowed before the run stops (resumable)", positiveInt("--max-turns"), 200)
      .option("--max-wall-minutes <n>", "wall-clock budget in minutes (resumable)", positiveInt("--max-wall-minutes"), 1440)
      .option("--role-timeout-minutes <n>", "time a Director or Verifier may take for one answer", positiveInt("--role-timeout-minutes"), 20)
      .addOption(new Option("--checkpoint-every <n>", "no longer used: a checkpoint is taken at every handoff").hideHelp()),
  ).action(async (objective, opts) => {
    if (opts.checkpointEvery !== undefined) process.stderr.write("relay: warning: --checkpoint-every is ignored: a checkpoint is now taken at every handoff (see: relay infty checkpoints <run-id>)\n");
    await drive(
      {
        objective,
        runId: opts.runId,
        verifiers: opts.verifiers,
        consensus: opts.consensus,
        maxTurns: opts.maxTurns,
        maxWallMs: opts.maxWallMinutes * 60_000,
        roleTimeoutMs: opts.roleTimeoutMinutes * 60_000,
      },
      opts as unknown as ModelFlags,
    );
  });
}

function addResume(infty: Parent) {
  modelOptions(
    infty
      .command("resume")
      .description("continue a run after a crash, Ctrl-C or an exhausted budget")
      .argument("<run-id>", "the run to continue")
      .option("--max-turns <n>", "raise the turn budget", positiveInt("--max-turns"))
      .option("--max-wall-minutes <n>", "raise the wall-clock budget", positiveInt("--max-wall-minutes"))
      .option("--role-timeout-minutes <n>", "time a Director or Verifier may take for one answer", positiveInt("--role-timeout-minutes"), 20),
  ).action(async (runId, opts) => {
    await drive(
      { runId, resume: true, maxTurns: opts.maxTurns, maxWallMs: opts.maxWallMinutes ? opts.maxWallMinutes * 60_000 : undefined, roleTimeoutMs: opts.roleTimeoutMinutes * 60_000 },
      opts as unknown as ModelFlags,
    );
  });
}

function addStatus(infty: Parent) {
  infty
    .command("status")
    .description("show a run's state")
    .argument("<run-id>")
    .option("--json", "print run.json")
    .action(async (runId, opts) => {
      const r = await RunStore.load(relayHome(), runId);
      if ("error" in r) fail(r.error.message, ExitCode.Usage);
      const s = r.ok.state;
      if (opts.json) {
        process.stdout.write(JSON.stringify(s, null, 2) + "\n");
        return;
      }
      const lines = [
        `run:        ${s.run_id} (${r.ok.dir})`,
        `status:     ${s.status}${s.status_detail ? ` — ${s.status_detail}` : ""}`,
        `objective:  ${s.objective.split("\n")[0]}`,
        `turns:      ${s.turns}/${s.max_turns}; wall ${Math.round(s.wall_ms_used / 1000)}s of ${Math.round(s.max_wall_ms / 60_000)} min`,
        `verifiers:  ${s.verifiers} (${s.consensus} must pass)`,
        `heartbeat:  ${s.heartbeat_at}`,
        `pending:    ${s.pending ? s.pending.type : "nothing"}`,
        `checkpoint: ${s.last_checkpoint ?? "none"}`,
        `deliverable: ${s.deliverable ? s.deliverable.path : "not yet"}`,
        ...s.roles.map((role) => `  ${role.role.padEnd(11)} ${role.rollout_path ?? ""}`),
      ];
      process.stdout.write(lines.join("\n") + "\n");
    });
}

function addList(infty: Parent) {
  infty
    .command("list")
    .description("list runs, most recently updated first")
    .option("--json", "print JSON")
    .action(async (opts) => {
      const { runs, warnings } = await RunStore.list(relayHome());
      for (const w of warnings) process.stderr.write(`relay: warning: ${w}\n`);
      if (opts.json) {
        process.stdout.write(JSON.stringify(runs.map((r) => ({ run_id: r.run_id, status: r.status, turns: r.turns, updated_at: r.updated_at, objective: r.objective, path: path.join(RunStore.runsRoot(relayHome()), r.run_id) }))) + "\n");
        return;
      }
      if (runs.length === 0) process.stderr.write("no runs yet; start one with: relay infty run \"objective\"\n");
      for (const r of runs) process.stdout.write(`${r.run_id}\t${r.status}\t${r.turns} turns\t${r.updated_at}\t${r.objective.split("\n")[0]!.slice(0, 60)}\n`);
    });
}

function addLogs(infty: Parent) {
  infty
    .command("logs")
    .description("print a run's event log (events.jsonl)")
    .argument("<run-id>")
    .option("--json", "print the raw JSON lines")
    .option("-n, --lines <n>", "only the last N events", positiveInt("--lines"))
    .action(async (runId, opts) => {
      const r = await RunStore.load(relayHome(), runId);
      if ("error" in r) fail(r.error.message, ExitCode.Usage);
      const file = path.join(r.ok.dir, "events.jsonl");
      const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
      for (const line of opts.lines ? lines.slice(-opts.lines) : lines) {
        if (opts.json) {
          process.stdout.write(line + "\n");
          continue;
        }
        try {
          const e = JSON.parse(line) as Record<string, unknown>;
          const { at, type, ...rest } = e;
          process.stdout.write(`${at} ${type} ${Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "string" ? v.replace(/\n/g, " ").slice(0, 160) : JSON.stringify(v)}`).join(" ")}\n`);
        } catch {
          process.stdout.write(`(unreadable line) ${line.slice(0, 160)}\n`);
        }
      }
    });
}
