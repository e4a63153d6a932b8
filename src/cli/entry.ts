/**
 * Runs the relay command tree (everything but the sandbox helper, which src/main.ts starts
 * itself). The servers relay re-execs itself as start without it (cli/direct.ts).
 */
import { logsDir, relayHome } from "../home/home.ts";
import { applyPersonality } from "../package/personality.ts";
import { Log, logSettingsFromEnv } from "../util/log.ts";
import { currentRuntime } from "../util/runtime.ts";
import { directServer } from "./direct.ts";
import type { buildProgram } from "./program.ts";
import { ExitCode, UsageError } from "./usage.ts";

const log = Log.create("cli");

/** `relay frobnicate --help` must not answer with the main help and exit 0. */
function unknownCommandWithHelp(program: Awaited<ReturnType<BuildProgram>>, argv: string[]): string | undefined {
  const first = argv[2];
  if (!first || first.startsWith("-") || !argv.some((a) => a === "--help" || a === "-h")) return undefined;
  const known = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  return known.includes(first) || first === "help" ? undefined : first;
}

/**
 * This process's log, from the environment ($RELAY_HOME/logs, RELAY_LOG); `--verbose` changes
 * it once the command line is parsed (program.ts). Opens nothing yet.
 */
export function configureLog(env: NodeJS.ProcessEnv = process.env): void {
  const { settings, problems } = logSettingsFromEnv(env, logsDir(relayHome(env)));
  Log.configure(settings);
  for (const p of problems) process.stderr.write(`relay: ${p}\n`);
}

let crashing = false;

/** The one report of an error nothing handled: a line on stderr, the stack in the log. */
function unexpected(e: unknown): never {
  if (crashing) process.exit(ExitCode.Failure);
  crashing = true;
  const message = e instanceof Error ? e.message : String(e);
  log.error("unexpected error", { error: e instanceof Error ? e : String(e) });
  const file = Log.filePath();
  process.stderr.write(`relay: unexpected error: ${message}${file ? ` (details in ${file})` : ""}\n`);
  if (!file && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  process.exit(ExitCode.Failure);
}

type BuildProgram = typeof buildProgram;
const loadProgram: BuildProgram = async (argv) => (await import("./program.ts")).buildProgram(argv);

/** `build` makes the command tree for the command line (tests add commands to it). */
export async function runCli(
  build: (argv: readonly string[]) => ReturnType<BuildProgram> = loadProgram,
): Promise<void> {
  configureLog();
  process.on("uncaughtException", unexpected);
  process.on("unhandledRejection", unexpected);
  // A packaged copy named relay-code-mode-host acts as `relay code-mode-host` (src/package/personality.ts).
  const argv = applyPersonality(process.argv, process.execPath, currentRuntime() === "bun-compiled");
  const serve = build === loadProgram ? directServer(argv) : undefined;
  if (serve) return serve();
  const program = await build(argv);
  const unknown = unknownCommandWithHelp(program, argv);
  if (unknown !== undefined) {
    process.stderr.write(
      `relay: unknown command '${unknown}'; the commands are: ${program.commands
        .filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
        .map((c) => c.name())
        .join(", ")} (see relay --help)\n`,
    );
    process.exit(ExitCode.Usage);
  }
  program.parseAsync(argv).catch((e: unknown) => {
    if (!(e instanceof UsageError)) unexpected(e);
    process.stderr.write(`relay: ${e.message}\n`);
    process.exit(ExitCode.Usage);
  });
}
