import { isatty } from "node:tty";
import { Command, Option, type OptionValues } from "@commander-js/extra-typings";
import { APPROVAL_POLICIES, type ConfigOverrides, loadConfig, type RelayConfig } from "../config/config.ts";
import { resolveConfig } from "../config/resolve.ts";
import { resumeSettings } from "../config/resume-settings.ts";
import type { EmitEvent } from "../contracts/events.ts";
import { SANDBOX_MECHANISMS, SANDBOX_MODES } from "../contracts/sandbox-policy.ts";
import { relayHome } from "../home/home.ts";
import { sessionMemories } from "../memories/read.ts";
import { withStartupMemories } from "../memories/startup.ts";
import { MODEL_PROVIDERS } from "../model/factory.ts";
import { nonInteractiveApprover, terminalApprover } from "../policy/approval.ts";
import { checkCredentials, checkPrompt, checkScriptFile, checkWorkingDir } from "../policy/preflight.ts";
import { runSession } from "../session/runtime.ts";
import { ok } from "../util/result.ts";
import { wholeNumber } from "./number-flag.ts";
import { humanRenderer, jsonRenderer } from "./run-render.ts";
import { type RunSource, runSource } from "./run-source.ts";
import { selection, withToolOptions } from "./session-options.ts";
import { resolvePrompt } from "./stdin-prompt.ts";
import { ExitCode, fail, warn } from "./usage.ts";

/** Which model, where, and how it thinks (or a script in its place). */
function withModelOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>) {
  return cmd
    .option("-m, --model <name>", "model name (config: model)")
    .option(
      "--reasoning-effort <level>",
      "reasoning effort for the Responses API, e.g. low, medium, high (config: model_reasoning_effort)",
    )
    .addOption(
      new Option(
        "--reasoning-summary <mode>",
        "reasoning summaries for the Responses API (config: model_reasoning_summary)",
      ).choices(["auto", "concise", "detailed"] as const),
    )
    .addOption(new Option("--provider <provider>", "model API (config: model_provider)").choices(MODEL_PROVIDERS))
    .option(
      "--base-url <url>",
      "API base URL, e.g. http://localhost:11434/v1 for Ollama (config: base_url; env OPENAI_BASE_URL)",
    )
    .option(
      "--api-key-env <name>",
      "environment variable that holds the API key (config: api_key_env; default OPENAI_API_KEY)",
    )
    .option(
      "--script <file>",
      "use the SCRIPTED provider: replay model turns from a JSON file instead of calling a model (offline demos and tests)",
    );
}

/** When to ask, and how commands are confined. */
function withPolicyOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>) {
  return cmd
    .addOption(
      new Option(
        "-a, --approval <policy>",
        "when to ask before running: untrusted (ask unless read-only), on-request (ask only to leave the sandbox), never (never ask)",
      ).choices(APPROVAL_POLICIES),
    )
    .addOption(new Option("-s, --sandbox <mode>", "sandbox for commands (config: sandbox_mode)").choices(SANDBOX_MODES))
    .addOption(
      new Option(
        "--sandbox-mechanism <mechanism>",
        "how the sandbox is enforced: auto (built-in Landlock + seccomp, else bubblewrap), landlock, bwrap (config: sandbox.mechanism)",
      ).choices(SANDBOX_MECHANISMS),
    )
    .option(
      "--sandbox-best-effort",
      "run with weaker enforcement where the kernel lacks a sandbox feature; the header says what is not enforced (config: sandbox.best_effort)",
    );
}

function runOptions() {
  const cmd = withPolicyOptions(withModelOptions(new Command("run")))
    .description(
      "run one agent session for a prompt: the model works through tools on an executor until the task is done",
    )
    .argument(
      "[prompt]",
      "what the agent should do; - (or no argument with stdin piped) reads it from stdin; optional with --resume when the last turn was cut off",
    )
    .option(
      "-C, --cd <dir>",
      "working directory for the session (default: the current directory, or the resumed session's)",
    )
    .option(
      "-r, --resume [id]",
      "continue a saved session: its id, a unique id prefix, or last; without an id, pick one from a list (on a terminal)",
    )
    .option(
      "--fork <id>",
      "start a new session with a copy of a saved session's history (id, prefix or last); the saved session is left unchanged",
    )
    .option(
      "--context-window <tokens>",
      "model context window in tokens (config: model_context_window; default 128000)",
      wholeNumber("--context-window"),
    )
    .option(
      "--auto-compact <fraction>",
      "compact history when the context reaches this fraction of the window (config: auto_compact_fraction; default 0.9)",
    )
    .option("--max-steps <n>", "model requests allowed for this turn", wholeNumber("--max-steps"), 200)
    .option("--json", "print one JSON event per line on stdout instead of human progress")
    .option(
      "--fail-on-tool-error",
      "exit 1 when any tool call of the turn failed, even if the model finished (for scripts and demos)",
    )
    .option(
      "--no-memories",
      "do not inject $RELAY_HOME/memories/memory_summary.md nor count memory citations (env RELAY_NO_MEMORIES=1; config [memories] use_memories)",
    );
  return withToolOptions(cmd);
}

export function runCommand() {
  return runOptions().addHelpText("after", RUN_HELP).action(runAction);
}

type RunOpts = ReturnType<ReturnType<typeof runOptions>["opts"]>;

const RUN_HELP = `
Configuration comes from $RELAY_HOME/config.toml (default ~/.relay), then these flags.
--resume continues with what the session recorded (provider, model, base URL, key variable,
reasoning, approval, sandbox, executor, code mode, capability roots, environments); a flag
given with it wins.
--fork carries the same over into a new session whose rollout records the source's id and path.
Sessions are saved as JSONL rollouts under $RELAY_HOME/sessions/YYYY/MM/DD/; relay sessions
list shows them. To pick one from the list and give a prompt, put the prompt first:
relay run "next request" --resume.

Exit codes: 0 the turn completed; 1 the model or session failed, the step limit was hit, or
(with --fail-on-tool-error) a tool call failed;
2 bad usage or config; 130 interrupted (the session is saved: relay run --resume last).

Examples:
  relay run "fix the failing test in src/parser"
  relay run --provider openai-chat --base-url http://localhost:11434/v1 -m qwen3-coder "explain this repo"
  relay run --script examples/demo-script.json --approval never "create hello.py and run it"
  relay run --resume last "now add a README"
  relay run --fork last "try it the other way instead"
  relay run - < task.md                       # the prompt from a file
  echo "explain the build" | relay run        # piped stdin without an argument is the prompt`;

/** The config file, then what a resumed session recorded, then the flags. */
async function runConfig(home: string, opts: RunOpts, source: RunSource) {
  const loaded = await loadConfig(home);
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  warn(loaded.ok.warnings);
  const flags: ConfigOverrides = {
    model: opts.model ?? (opts.script ? "scripted" : undefined),
    provider: opts.provider,
    base_url: opts.baseUrl,
    api_key_env: opts.apiKeyEnv,
    reasoning_effort: opts.reasoningEffort,
    reasoning_summary: opts.reasoningSummary,
    approval_policy: opts.approval,
    sandbox_mode: opts.sandbox,
    sandbox_mechanism: opts.sandboxMechanism,
    sandbox_best_effort: opts.sandboxBestEffort,
    executor: opts.executor,
    model_context_window: opts.contextWindow,
    auto_compact_fraction: opts.autoCompact,
  };
  // A resumed session keeps what it ran with (provider, model, base URL, approval, sandbox,
  // reasoning, executor, code mode, capability roots) unless a flag says otherwise.
  const recorded = source.from
    ? await resumeSettings(home, source.from, loaded.ok.config)
    : { overrides: {}, choices: {} };
  const config = resolveConfig(loaded.ok.config, { recorded: [recorded.overrides], flags: [flags] });
  if ("error" in config) fail(config.error.message, ExitCode.Usage);
  return { config: config.ok, recorded };
}

/** Refuses, before anything is written (no rollout), a request that cannot start. */
function checkStartable(prompt: string | undefined, opts: RunOpts, config: RelayConfig, source: RunSource): number {
  const maxSteps = opts.maxSteps;
  if (prompt === undefined && !source.from)
    fail("a prompt is required (or --resume <id|last> to continue a session); see relay run --help", ExitCode.Usage);
  for (const check of [
    checkPrompt(prompt),
    checkWorkingDir(opts.cd),
    checkScriptFile(opts.script),
    opts.script ? ok(null) : checkCredentials(config, process.env),
  ]) {
    if ("error" in check) fail(check.error.message, ExitCode.Usage);
  }
  return maxSteps;
}

/** The first Ctrl-C stops the turn (the session is saved); the second exits at once. */
function interruptSignal(): AbortSignal {
  const ctrl = new AbortController();
  let interrupts = 0;
  process.on("SIGINT", () => {
    if (++interrupts > 1) process.exit(ExitCode.Interrupted);
    ctrl.abort();
  });
  return ctrl.signal;
}

/** Renders events and remembers the failed tool calls and the errors already shown. */
function eventSink(json: boolean) {
  // Made on the next event-loop turn, while the executor starts: under Bun, creating the
  // process.stdout and process.stderr streams costs milliseconds its spawn should not wait for.
  let render: EmitEvent | undefined;
  const renderer = () => (render ??= json ? jsonRenderer() : humanRenderer());
  setTimeout(renderer, 0);
  const failedTools: Array<{ name: string; output: string }> = [];
  const shownErrors = new Set<string>();
  const emit: EmitEvent = (e) => {
    if (e.type === "tool_result" && !e.success) failedTools.push({ name: e.name, output: e.output });
    if (e.type === "error" && !json) shownErrors.add(e.message);
    renderer()(e);
  };
  return { emit, failedTools, shownErrors };
}

async function runAction(promptArg: string | undefined, opts: RunOpts): Promise<void> {
  const home = relayHome();
  const source = await runSource(home, opts);
  const prompt = await resolvePrompt(promptArg, source.from !== undefined);
  const { config, recorded } = await runConfig(home, opts, source);
  const chosen = selection(opts, recorded.choices, config);
  const maxSteps = checkStartable(prompt, opts, config, source);
  const interactive = isatty(0) && isatty(2);
  const sink = eventSink(Boolean(opts.json));
  const result = await runSession({
    home,
    config,
    prompt,
    resume: source.resume,
    fork: source.fork,
    cwd: opts.cd,
    scriptPath: opts.script,
    executorName: chosen.executorName,
    capabilityRoots: chosen.capabilityRoots,
    environments: chosen.environments,
    maxSteps,
    approver: interactive ? terminalApprover() : nonInteractiveApprover,
    emit: withStartupMemories(sink.emit, { home, config, script: opts.script }),
    signal: interruptSignal(),
    codeMode: opts.codeMode ?? recorded.choices.codeMode,
    memories: opts.memories === false ? undefined : sessionMemories,
  });
  if ("error" in result) {
    const code = result.error.code;
    // One line per error: the renderer may have shown it already.
    if (!sink.shownErrors.has(result.error.message) && (!opts.json || !code.startsWith("model_")))
      process.stderr.write(`relay: ${result.error.message}\n`);
    process.exit(
      code === "usage" || code.startsWith("invalid") || code.startsWith("session_") || code === "nothing_to_resume"
        ? ExitCode.Usage
        : ExitCode.Failure,
    );
  }
  const { outcome } = result.ok;
  if (outcome.status === "aborted") process.exit(ExitCode.Interrupted);
  if (opts.failOnToolError && sink.failedTools.length > 0) {
    const first = sink.failedTools[0]!;
    fail(
      `${sink.failedTools.length} tool call(s) failed; the first, ${first.name}: ${first.output.split("\n").find((l) => l.trim()) ?? "(no output)"}`,
      ExitCode.Failure,
    );
  }
  process.exit(outcome.status === "completed" ? ExitCode.Ok : ExitCode.Failure);
}
