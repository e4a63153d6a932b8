/** Builds the `relay` command tree. Each subcommand lives in its own file under src/cli/. */

import { Command, type CommanderError } from "@commander-js/extra-typings";
import { Log } from "../util/log.ts";
import { VERSION } from "../version.ts";
import { logCommandStart } from "./command-log.ts";
import { helpWidth, wrapHelpText } from "./help-wrap.ts";
import { ExitCode } from "./usage.ts";
import { writeDirect } from "./write-direct.ts";

type AnyCommand = Command<unknown[], Record<string, unknown>, Record<string, unknown>>;

const VERBOSE_HELP = "print debug log lines on stderr too (as RELAY_LOG=debug; children inherit it)";
/**
 * Every subcommand, loaded on demand: a re-exec'd `relay executor` must not pay for the module
 * trees of run, infty or memories (start-up is paid once per child process).
 */
const SUBCOMMANDS: ReadonlyArray<{ name: string; hidden?: boolean; load: () => Promise<AnyCommand> }> = [
  { name: "run", load: async () => (await import("./run.ts")).runCommand() as never },
  { name: "sessions", load: async () => (await import("./sessions.ts")).sessionsCommand() as never },
  { name: "skills", load: async () => (await import("./skills.ts")).skillsCommand() as never },
  { name: "executor", load: async () => (await import("./executor.ts")).executorCommand() as never },
  { name: "code-mode-host", load: async () => (await import("./code-mode-host.ts")).codeModeHostCommand() as never },
  { name: "infty", load: async () => (await import("./infty/command.ts")).inftyCommand() as never },
  { name: "memories", load: async () => (await import("./memories.ts")).memoriesCommand() as never },
  { name: "package", load: async () => (await import("./package.ts")).packageCommand() as never },
  { name: "mcp", load: async () => (await import("./mcp.ts")).mcpCommand() as never },
  { name: "sandbox", load: async () => (await import("./sandbox.ts")).sandboxCommand() as never },
  { name: "doctor", load: async () => (await import("./doctor.ts")).doctorCommand() as never },
  { name: "completion", load: async () => (await import("./completion.ts")).completionCommand() as never },
  { name: "rpc-echo", hidden: true, load: async () => (await import("./rpc-echo.ts")).rpcEchoCommand() as never },
];

/** The word that names the subcommand (relay's own flags take no values), if any. */
export function subcommandWord(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((a) => !a.startsWith("-"));
}

/**
 * The subcommands to load for `argv`: only the named one, or all of them where the whole tree
 * is asked for (help, completion scripts, an unknown name that wants the list of names); none
 * for `--version`.
 */
function subcommandsFor(argv: readonly string[]) {
  const word = subcommandWord(argv);
  if (word === undefined && argv.some((a) => a === "-V" || a === "--version")) return [];
  const named = SUBCOMMANDS.find((c) => c.name === word);
  return named && named.name !== "completion" ? [named] : SUBCOMMANDS;
}

/** The command tree for `argv` (all subcommands when `argv` is omitted). */
export async function buildProgram(argv?: readonly string[]) {
  const chosen = argv ? subcommandsFor(argv) : SUBCOMMANDS;
  const loaded = await Promise.all(chosen.map(async (c) => ({ command: await c.load(), hidden: c.hidden === true })));
  const program = rootCommand();
  for (const { command, hidden } of loaded) program.addCommand(command, { hidden });
  applyUsageExitCode(program);
  for (const sub of program.commands) {
    addVerbose(sub as never);
    directOutput(sub as never, program.configureOutput());
  }
  program.hook("preAction", (_root, action) => startCommandLog(action as never));
  return program;
}

function rootCommand() {
  const program = new Command("relay")
    .description(
      "Relay: a single-binary toolkit for long-running autonomous coding-agent work.\n" +
        "Subcommands re-exec this same binary as child processes that speak a framed stdio protocol.",
    )
    .version(VERSION, "-V, --version", "print the relay version")
    // Help (what writeOut prints) fits the terminal; errors stay one line each.
    .configureOutput({
      writeOut: (text) => writeDirect(1, wrapHelpText(text, helpWidth())),
      writeErr: (text) => writeDirect(2, text),
      getOutHelpWidth: helpWidth,
    })
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

/**
 * A subcommand's help goes out as the root's does, and a mistyped subcommand at any level gets
 * a did-you-mean (addCommand copies neither setting).
 */
function directOutput(cmd: AnyCommand, output: ReturnType<AnyCommand["configureOutput"]>): void {
  cmd.configureOutput(output);
  cmd.showSuggestionAfterError(true);
  for (const sub of cmd.commands) directOutput(sub as never, output);
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
  logCommandStart(
    chain
      .slice(1)
      .map((c) => c.name())
      .join(" "),
  );
}
