import path from "node:path";
import { Command, Option, type OptionValues } from "@commander-js/extra-typings";
import { ROLE_SPEC_HELP } from "../../config/role-spec.ts";
import { SANDBOX_MECHANISMS, SANDBOX_MODES } from "../../contracts/sandbox-policy.ts";
import { relayHome } from "../../home/home.ts";
import { runLiveness, shownStatus } from "../../infty/liveness.ts";
import { type InftyEvent, type InftyOptions, runInfty } from "../../infty/orchestrator.ts";
import { MAX_WALL_MS, type RunMeta } from "../../infty/run-format.ts";
import { generateRunId, RunStore, validateRunId } from "../../infty/run-store.ts";
import { sessionMemories } from "../../memories/read.ts";
import { MODEL_PROVIDERS } from "../../model/factory.ts";
import { err } from "../../util/result.ts";
import { alignRows, outputWidth } from "../session-format.ts";
import { withToolOptions } from "../session-options.ts";
import { ExitCode, fail, warn } from "../usage.ts";
import { addCheckpoints, addPack, addRestore } from "./checkpoints.ts";
import { type InftyFlags, inftyRunConfig } from "./config.ts";
import { duration, roleModel, roleModels, wholeNumber } from "./flags.ts";
import { addRequeue, addSubmit, addWorker, addWorkers, DB_ENV, DB_HELP, fleetDriving, listFleet } from "./fleet.ts";
import { addLogs } from "./logs.ts";
import { addNote, addStop } from "./operator.ts";
import { ProgressLines } from "./progress.ts";
import { addApply, addDiff, repoOptions, repoRequest } from "./repo.ts";
import { loadRun, RUN_ARG_HELP, runArg } from "./run-arg.ts";
import { addServe } from "./serve.ts";
import { statusLines } from "./status.ts";

function modelOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>) {
  const withModels = cmd
    .option("-m, --model <name>", "model for every role without one of its own (config: model)")
    .addOption(
      new Option("--provider <provider>", "model API for every role (config: model_provider)").choices(MODEL_PROVIDERS),
    )
    .option(
      "--base-url <url>",
      "API base URL for every role, e.g. http://localhost:11434/v1 for Ollama (config: base_url)",
    )
    .option(
      "--api-key-env <name>",
      "environment variable that holds the API key, for every role without key-env= of its own (config: api_key_env; default OPENAI_API_KEY)",
    )
    .option(
      "--solver-model <spec>",
      `the Solver's model: ${ROLE_SPEC_HELP} (config: [infty.roles.solver])`,
      roleModel("--solver-model"),
    )
    .option(
      "--director-model <spec>",
      `the Director's model, as --solver-model (config: [infty.roles.director])`,
      roleModel("--director-model"),
    )
    .option(
      "--verifier-model <spec>",
      "a Verifier's model, as --solver-model; repeatable: Verifier i gets the i-th, the last repeats (config: [infty.roles.verifier])",
      roleModels("--verifier-model"),
    )
    .option(
      "--script <file>",
      "SCRIPTED models: replay each role's turns from a JSON file {solver, director, verifiers[]} (offline demos and tests)",
    )
    .addOption(
      new Option("-s, --sandbox <mode>", "sandbox for the roles' commands (default: config sandbox_mode)").choices(
        SANDBOX_MODES,
      ),
    )
    .addOption(
      new Option(
        "--sandbox-mechanism <mechanism>",
        "auto (built-in Landlock + seccomp, else bubblewrap), landlock or bwrap (config: sandbox.mechanism)",
      ).choices(SANDBOX_MECHANISMS),
    )
    .option(
      "--sandbox-best-effort",
      "run with weaker enforcement where the kernel lacks a sandbox feature (config: sandbox.best_effort)",
    )
    .option(
      "--no-structured-output",
      "never ask the model server for structured output (strict JSON schemas); for servers that accept it but then cannot call tools. Servers that refuse it are detected without this flag. Kept for the rest of the run",
    )
    .option(
      "--max-tokens <n>",
      "tokens all roles may use together (every model request's total); the run stops cleanly, resume with a larger one (default: no budget)",
      wholeNumber("--max-tokens", 1, Number.MAX_SAFE_INTEGER),
    )
    .option(
      "--fail-on-tool-error",
      "end the run (failed, resumable) at the first failed tool call of any role, naming it; for scripted demos and CI",
    )
    .option("--json", "print one JSON event per line on stdout instead of progress lines");
  return withToolOptions(withModels, "every role");
}

/** --max-wall and --role-timeout, with the older --*-minutes spellings (plain numbers are minutes). */
function budgetOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  defaults: boolean,
) {
  const dflt = (d: string) => (defaults ? ` (default: ${d})` : "");
  return cmd
    .option(
      "--max-wall <duration>",
      `wall-clock budget over all attempts, e.g. 90m, 12h, 2d (resumable)${dflt("1d")}`,
      duration("--max-wall", { maxMs: MAX_WALL_MS }),
    )
    .addOption(
      new Option("--max-wall-minutes <n>", "the same in minutes (older spelling)")
        .argParser(duration("--max-wall-minutes", { defaultUnit: "m", maxMs: MAX_WALL_MS }))
        .conflicts(["maxWall", "maxHours"]),
    )
    .addOption(
      new Option("--max-hours <n>", "the same in hours (--max-hours 36 is --max-wall 36h)")
        .argParser(duration("--max-hours", { defaultUnit: "h", maxMs: MAX_WALL_MS }))
        .conflicts("maxWall"),
    )
    .option(
      "--role-timeout <duration>",
      `time a Director or Verifier may take for one answer, e.g. 90s, 20m, 2h${dflt("20m")}`,
      duration("--role-timeout"),
    )
    .addOption(
      new Option("--role-timeout-minutes <n>", "the same in minutes (older spelling)")
        .argParser(duration("--role-timeout-minutes", { defaultUnit: "m" }))
        .conflicts("roleTimeout"),
    );
}

type CommonFlags = InftyFlags & {
  failOnToolError?: boolean;
  json?: boolean;
  structuredOutput?: boolean;
  maxTokens?: number;
};

/** Progress lines on stderr (or one JSON event a line on stdout); the deliverable's path goes to stdout. */
function reporter(json: boolean, progress: ProgressLines): (e: InftyEvent) => void {
  if (json) return (e) => process.stdout.write(JSON.stringify(e) + "\n");
  return (e) => {
    for (const line of progress.lines(e)) process.stderr.write(`${line}\n`);
    if (e.type === "run_finished" && e.deliverable) process.stdout.write(`${e.deliverable}\n`);
  };
}

/** The run id's own errors come before any about models or keys: they are the more specific. */
async function checkRunId(o: { runId?: string; resume?: boolean }): Promise<RunMeta | undefined> {
  if (o.runId === undefined) return undefined;
  const id = validateRunId(o.runId);
  if ("error" in id) fail(id.error.message, ExitCode.Usage);
  if (!o.resume) return undefined;
  // A resume finishes a creation that a crash cut short, or says what was lost (exit 2).
  const found = await RunStore.load(relayHome(), o.runId, { recover: true });
  if ("error" in found) fail(found.error.message, ExitCode.Usage);
  return found.ok.state;
}

type DriveOptions = Omit<InftyOptions, "report" | "signal" | "home" | "config">;

async function drive(o: DriveOptions, flags: CommonFlags & { db?: string }): Promise<never> {
  const recorded = await checkRunId(o);
  const run = await inftyRunConfig(flags, recorded?.settings, recorded?.verifiers ?? o.verifiers ?? 1);
  const ctrl = new AbortController();
  let presses = 0;
  let signalled = false;
  // A fleet run's id is known before it starts: requests for it are looked for from the start.
  const runId = o.runId ?? generateRunId();
  const fleet = await fleetDriving(flags.db, runId, () => ctrl.abort());
  process.on("SIGINT", () => {
    signalled = true;
    if (++presses > 1) process.exit(ExitCode.Interrupted);
    process.stderr.write(
      "relay: stopping after the current step; the run stays resumable (Ctrl-C again to quit now)\n",
    );
    ctrl.abort();
  });
  process.on("SIGTERM", () => {
    signalled = true;
    ctrl.abort();
  });
  const progress = new ProgressLines();
  const r = await runInfty({
    ...o,
    runId,
    ...run,
    home: relayHome(),
    report: reporter(Boolean(flags.json), progress),
    signal: ctrl.signal,
    failOnToolError: Boolean(flags.failOnToolError),
    structuredOutput: flags.structuredOutput !== false,
    maxTokens: flags.maxTokens,
    memories: sessionMemories,
    ...(fleet ? { lease: fleet.lease, heartbeatMs: fleet.heartbeatMs, fleetDb: fleet.url } : {}),
  }).catch((e: NodeJS.ErrnoException) => {
    if (typeof e.code !== "string") throw e;
    // A run store that cannot be written (its filesystem gone): the lease was released on the way out.
    const root = RunStore.runsRoot(relayHome());
    return err(
      "store_unwritable",
      `run ${runId}: its run store could not be written (${e.message}); the run stopped and released its lease, and nothing of it is half written (each write is a temp file renamed into place). Once ${root} is reachable again: relay infty resume ${runId}`,
    );
  });
  await fleet?.record(r, signalled);
  if ("ok" in r && !flags.json) {
    const final = await RunStore.load(relayHome(), r.ok.runId);
    if ("ok" in final) process.stderr.write(`\n${progress.summary(final.ok.state, final.ok.dir).join("\n")}\n`);
  }
  if ("error" in r) {
    // Refusals before anything started (a bad id, a dirty tree, a taken branch, no git) are usage errors.
    const usage =
      [
        "usage",
        "run_not_found",
        "run_not_created",
        "run_exists",
        "repo_dirty",
        "repo_no_commit",
        "not_a_repository",
        "branch_exists",
        "git_missing",
        "no_remote",
      ].includes(r.error.code) || r.error.code.startsWith("invalid");
    fail(r.error.message, usage ? ExitCode.Usage : ExitCode.Failure);
  }
  if (r.ok.pushError) fail(`run ${r.ok.runId} is complete, but its push failed: ${r.ok.pushError}`);
  const code =
    r.ok.status === "complete" ? ExitCode.Ok : r.ok.status === "interrupted" ? ExitCode.Interrupted : ExitCode.Failure;
  process.exit(code);
}

export function inftyCommand() {
  const infty = new Command("infty")
    .description("long-running Solver / Director / Verifier runs with a durable run store, checkpoints and resume")
    .addHelpText(
      "after",
      `
A run works on a repository (its own checkout and branch; see relay infty run --help) and lives
in $RELAY_HOME/infty/<run-id>/: checkout/ and review/ (the Solver's and the Verifiers' worktrees),
artifacts/, memory/ (notes.jsonl, claims/, verifications.jsonl), index/ (the claims and
artifacts indexes kept by the orchestrator), deliverable/, sessions/ (a fleet run's roles' rollouts),
run.json (state), lease.json (its one driver), events.jsonl (log) and .checkpoints.git (a checkpoint after every handoff:
\`relay infty checkpoints <id>\`; rewind with \`relay infty restore <id> <checkpoint>\`).
The Solver works autonomously; it asks the Director for direction and the Verifiers for
verification through JSON signals; after a passing verification it builds deliverable/
with a README.md manifest that the orchestrator checks against the files.

Every change of run.json is one atomic write, so a crash (even SIGKILL) at any point is resumable:
\`relay infty resume <id>\` goes on from the step that was cut off and never asks a role again for an
answer its session already recorded. Resuming a complete run checks its deliverable again (exit 0).

Watch runs in a browser with \`relay infty serve\` (http://127.0.0.1:7788; over ssh: ssh -L 7788:127.0.0.1:7788 host);
act on one from another terminal with \`relay infty stop <id>\` and \`relay infty note <id> "text"\`.

Exit codes: 0 complete; 1 failed or budget used up (resumable); 2 bad usage, or a run that was never
created (the message gives the command to start over); 130 interrupted (resumable).`,
    );
  addRun(infty);
  addSubmit(
    runOptions(
      infty
        .command("submit")
        .description("queue a run in the fleet DB for a worker to drive; prints its id (takes every option of run)")
        .argument("<objective>", "what the run must achieve"),
    ) as unknown as Command,
  );
  addWorker(infty);
  addWorkers(infty);
  addRequeue(infty);
  addResume(infty);
  addStatus(infty);
  addList(infty);
  addLogs(infty);
  addCheckpoints(infty);
  addRestore(infty);
  addPack(infty);
  addStop(infty);
  addNote(infty);
  addDiff(infty);
  addApply(infty);
  addServe(infty);
  return infty;
}

type Parent = Command;

/** Verifier sessions a run can have (each is a session with its own executor). */
const MAX_VERIFIERS = 32;
const MAX_TURNS = 1_000_000;

const ROLE_HELP = `
A model per role: --solver-model, --director-model and --verifier-model take
  MODEL[,provider=P][,base-url=URL][,effort=E][,key-env=VAR]
(the model may be left out: --director-model effort=high). --verifier-model repeats for a mixed
pool: Verifier i gets the i-th, the last one repeats. config.toml holds the same per role:
  [infty.roles.director]
  model = "gpt-5"
  model_reasoning_effort = "high"
with [infty.roles.solver] and [infty.roles.verifier] alike (model, model_provider, base_url,
model_reasoning_effort, api_key_env). Per setting the first that has it wins: the role's flag;
-m/--provider/--base-url (every role); what the run recorded (resume); [infty.roles.<role>];
the top of config.toml. run.json records each role's model; relay infty status shows them.

--executor, --executor-name, --capability-root and --code-mode give every role the tools they
give relay run; they are recorded and kept on resume (--no-code-mode turns code mode off).
Durations: 90s, 5m, 2h, 1d (--max-wall-minutes / --role-timeout-minutes take minutes).`;

const RUN_WORKSPACE_HELP = `
On a repository (-C <repo>, or the one the current directory is in; --no-repo for none), the run
gets its own checkout on a new branch relay/<run-id>; your tree, index, branch and HEAD are never
touched. A dirty tree is refused (commit or stash, or --include-uncommitted). The orchestrator
commits the checkout at each verification request and at delivery; Verifiers judge a clean
checkout of exactly that commit. Then: relay infty diff <run> and relay infty apply <run>.

Roles are autonomous: they never ask for approval (their approval policy is always never). Under
the default sandbox (workspace-write) the Solver may write its checkout and the run store's
artifacts/, memory/, deliverable/ and index/README.md; the Director memory/; Verifiers only temp
files. run.json, events.jsonl, lease.json, sessions/, index/ (but README.md), .checkpoints.git and the
repository's .git are read-only to every role. -s danger-full-access lifts all of that.`;

const RUN_EXAMPLES = `
Examples:
  relay infty run -C ~/src/parser "make the parser pass its tests" --verifiers 3 --max-wall 12h
  relay infty run --provider openai-chat --base-url http://localhost:11434/v1 \\
      --solver-model qwen3-coder:30b --director-model qwen3:32b \\
      --verifier-model qwen3:8b --verifier-model gemma3:12b --verifiers 3 "objective"
  relay infty run --director-model gpt-5,provider=openai-responses,base-url=https://api.openai.com/v1,effort=high \\
      --provider openai-chat --base-url http://localhost:11434/v1 -m qwen3-coder:30b "objective"`;

/** What `run` and `submit` both take. */
function runOptions(cmd: Command<[string]>) {
  const withRun = cmd
    .option(
      "--verifiers <n>",
      `number of Verifier sessions, 0 to ${MAX_VERIFIERS}`,
      wholeNumber("--verifiers", 0, MAX_VERIFIERS),
      1,
    )
    .addOption(
      new Option("--consensus <rule>", "how verdicts combine")
        .choices(["all", "majority"] as const)
        .default("all" as const),
    )
    .option("--run-id <id>", "name of the run (default: run-<UTC time>-<random>)")
    .option(
      "--max-turns <n>",
      "Solver turns allowed before the run stops (resumable)",
      wholeNumber("--max-turns", 1, MAX_TURNS),
      200,
    )
    .addOption(
      new Option("--checkpoint-every <n>", "no longer used: a checkpoint is taken at every handoff").hideHelp(),
    );
  return modelOptions(budgetOptions(repoOptions(withRun), true));
}

function addRun(infty: Parent) {
  const cmd = infty
    .command("run")
    .description("start a run for an objective and drive it to a verified deliverable")
    .argument("<objective>", "what the run must achieve");
  runOptions(cmd)
    .option("--db <url>", `drive it under the fleet's lease and record how it ends in the fleet's queue: ${DB_HELP}`)
    .addHelpText("after", RUN_WORKSPACE_HELP + "\n" + ROLE_HELP + "\n" + RUN_EXAMPLES)
    .action(async (objective, opts) => {
      if (opts.checkpointEvery !== undefined)
        process.stderr.write(
          "relay: warning: --checkpoint-every is ignored: a checkpoint is now taken at every handoff (see: relay infty checkpoints <run-id>)\n",
        );
      const { verifiers, consensus, runId, maxTurns } = opts;
      const maxWallMs = opts.maxWall ?? opts.maxHours ?? opts.maxWallMinutes ?? 86_400_000;
      const roleTimeoutMs = opts.roleTimeout ?? opts.roleTimeoutMinutes ?? 20 * 60_000;
      await drive(
        { objective, runId, verifiers, consensus, maxTurns, maxWallMs, roleTimeoutMs, repo: repoRequest(opts) },
        opts,
      );
    });
}

function addResume(infty: Parent) {
  const cmd = infty
    .command("resume")
    .description(
      "continue a run after a crash, Ctrl-C or an exhausted budget; it keeps the models, tools and budgets it recorded unless a flag changes them",
    )
    .argument("<run-id>", `the run to continue: ${RUN_ARG_HELP}`)
    .option("--max-turns <n>", "raise the turn budget", wholeNumber("--max-turns", 1, MAX_TURNS))
    .option("--db <url>", `drive it under the fleet's lease (a fleet's run): ${DB_HELP}`);
  modelOptions(budgetOptions(cmd, false))
    .addHelpText("after", ROLE_HELP)
    .action(async (ref, opts) => {
      const runId = await runArg(ref);
      const maxWallMs = opts.maxWall ?? opts.maxHours ?? opts.maxWallMinutes;
      const roleTimeoutMs = opts.roleTimeout ?? opts.roleTimeoutMinutes;
      await drive({ runId, resume: true, maxTurns: opts.maxTurns, maxWallMs, roleTimeoutMs }, opts);
    });
}

function addStatus(infty: Parent) {
  infty
    .command("status")
    .alias("show")
    .description("show a run's state, budgets and each role's model and tools")
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--json", "print run.json")
    .action(async (ref, opts) => {
      const store = await loadRun(ref);
      const s = store.state;
      if (opts.json) {
        process.stdout.write(JSON.stringify(s, null, 2) + "\n");
        return;
      }
      process.stdout.write(statusLines(s, store.dir, await runLiveness(store.dir, s)).join("\n") + "\n");
    });
}

function addList(infty: Parent) {
  infty
    .command("list")
    .description("list runs, most recently updated first (with --db: the fleet's runs, their workers and leases)")
    .option("--json", "print JSON")
    .option("--db <url>", `list the fleet's runs instead of this host's: ${DB_HELP}`)
    .action(async (opts) => {
      if (opts.db !== undefined || process.env[DB_ENV]) return listFleet(opts.db, Boolean(opts.json));
      const { runs, warnings } = await RunStore.list(relayHome());
      warn(warnings);
      if (opts.json) {
        const rows = await Promise.all(
          runs.map(async (r) => {
            const dir = path.join(RunStore.runsRoot(relayHome()), r.run_id);
            const l = await runLiveness(dir, r);
            return {
              run_id: r.run_id,
              status: r.status,
              live: l.live,
              ...(l.stale ? { stale: l.stale } : {}),
              turns: r.turns,
              updated_at: r.updated_at,
              objective: r.objective,
              path: dir,
              ...(r.repo ? { branch: r.repo.branch, commit: r.repo.head_commit } : {}),
            };
          }),
        );
        process.stdout.write(JSON.stringify(rows) + "\n");
        return;
      }
      if (runs.length === 0 && warnings.length === 0)
        process.stderr.write('no runs yet; start one with: relay infty run "objective"\n');
      const rows = await Promise.all(
        runs.map(async (r) => {
          const status = shownStatus(r, await runLiveness(path.join(RunStore.runsRoot(relayHome()), r.run_id), r));
          return { cells: [r.run_id, status, String(r.turns), r.updated_at], text: r.objective.split("\n")[0]! };
        }),
      );
      if (rows.length > 0)
        process.stdout.write(
          alignRows(rows, outputWidth(process.stdout), {
            cells: ["RUN", "STATUS", "TURNS", "UPDATED"],
            text: "OBJECTIVE",
          }).join("\n") + "\n",
        );
    });
}
