/** Builds the `relay` command tree. Each subcommand lives in its own file under src/cli/. */
import { Command, CommanderError } from "@commander-js/extra-typings";
import { Log } from "../util/log.ts";
import { currentRuntime } from "../util/runtime.ts";
import { VERSION } from "../version.ts";
import { codeModeHostCommand } from "./code-mode-host.ts";
import { completionCommand } from "./completion.ts";
import { doctorCommand } from "./doctor.ts";
import { executorCommand } from "./executor.ts";
import { inftyCommand } from "./infty.ts";
import { memoriesCommand } from "./memories.ts";
import { packageCommand } from "./package.ts";
import { rpcEchoCommand } from "./rpc-echo.ts";
import { runCommand } from "./run.ts";
import { sandboxCommand } from "./sandbox.ts";
import { sessionsCommand } from "./sessions.ts";
import { ExitCode } from "./usage.ts";

type AnyCommand = Command<unknown[], Record<string, unknown>, Record<string, unknown>>;

const VERBOSE_HELP = "print debug log lines on stderr too (as RELAY_LOG=debug; children inherit it)";
const log = Log.create("cli");

export function buildProgram() {
  const program = new Command("relay")
    .description(
      "Relay: a single-binary toolkit for long-running autonomous coding-agent work.\n" +
        "Subcommands re-exec this same binary as child processes that speak a framed stdio protocol.",
    )
    .version(VERSION, "-V, --version", "print the relay version")
    .showHelpAfterError("(run with --help for usage)")
    // `relay sandbox CMD -x` passes -x to CMD, which needs options to be positional.
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .option("--verbose", VERBOSE_HELP)
    .addHelpText(
      "after",
      "\nEnvironment:\n  RELAY_HOME           where sessions, state and memories live (default ~/.relay)\n" +
        "  RELAY_SELF_COMMAND   command line used to re-exec relay (default: detected)\n" +
        "  RELAY_LOG            debug|info|warn|error: log level, and log lines on stderr too (default:\n" +
        "                       info, to $RELAY_HOME/logs/relay.log only; relay doctor prints the path)\n" +
        "\nExit codes: 0 ok, 1 the work failed, 2 bad usage, 130 interrupted.",
    );
  program.addCommand(runCommand());
  program.addCommand(sessionsCommand());
  program.addCommand(executorCommand());
  program.addCommand(codeModeHostCommand());
  program.addCommand(inftyCommand());
  program.addCommand(memoriesCommand());
  program.addCommand(packageCommand());
  program.addCommand(sandboxCommand());
  program.addCommand(doctorCommand());
  program.addCommand(completionCommand());
  program.addCommand(rpcEchoCommand(), { hidden: true });
  applyUsageExitCode(program);
  for (const sub of program.commands) addVerbose(sub as never);
  program.hook("preAction", (_root, action) => startCommandLog(action as never));
  return program;
}

/** commander exits 1 on usage errors; scripts expect 2 for those. Help and --version stay 0. */
function applyUsageExitCode(cmd: Command<unknown[], Record<string, unknown>, Record<string, unknown>>): void {
  cmd.exitOverride((e: CommanderError) => {
    if (e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help") {
      process.exit(ExitCode.Ok);
    }
    if (e.code === "commander.executeSubCommandAsync") throw e;
    process.exit(ExitCode.Usage);
  });
  for (const sub of cmd.commands) applyUsageExitCode(sub as never);
}

/** `--verbose` after the subcommand too (`relay run --verbose ...`), not only before it. */
function addVerbose(cmd: AnyCommand): void {
  if (!cmd.options.some((o) => o.long === "--verbose")) cmd.option("--verbose", VERBOSE_HELP);
  for (const sub of cmd.commands) addVerbose(sub as never);
}

/** Before a subcommand's action: --verbose takes effect (for the children too), then the first record. */
function startCommandLog(action: AnyCommand): void {
  const chain: AnyCommand[] = [];
  for (let c: AnyCommand | null = action; c; c = c.parent as AnyCommand | null) chain.unshift(c);
  if (chain.some((c) => c.getOptionValue("verbose") === true)) {
    process.env.RELAY_LOG = "debug";
    const settings = Log.settings();
    if (settings) Log.configure({ ...settings, level: "debug", stderr: true });
  }
  const command = chain.slice(1).map((c) => c.name()).join(" ");
  const started = performance.now();
  log.info("start", { command, version: VERSION, runtime: currentRuntime(), cwd: process.cwd() });
  process.once("exit", (code) => log.debug("exit", { command, code, ms: Math.round(performance.now() - started) }));
}
