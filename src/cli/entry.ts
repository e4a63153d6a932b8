/** Runs the relay command tree (everything but the sandbox helper, which src/main.ts starts itself). */
import { applyPersonality } from "../package/personality.ts";
import { currentRuntime } from "../util/runtime.ts";
import { buildProgram } from "./program.ts";
import { ExitCode, UsageError } from "./usage.ts";

/** `relay frobnicate --help` must not answer with the main help and exit 0. */
function unknownCommandWithHelp(program: ReturnType<typeof buildProgram>, argv: string[]): string | undefined {
  const first = argv[2];
  if (!first || first.startsWith("-") || !argv.some((a) => a === "--help" || a === "-h")) return undefined;
  const known = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  return known.includes(first) || first === "help" ? undefined : first;
}

export function runCli(): void {
  const program = buildProgram();
  const unknown = unknownCommandWithHelp(program, process.argv);
  if (unknown !== undefined) {
    process.stderr.write(`relay: unknown command '${unknown}'; the commands are: ${program.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden).map((c) => c.name()).join(", ")} (see relay --help)\n`);
    process.exit(ExitCode.Usage);
  }
  program
  // A packaged copy named relay-code-mode-host acts as `relay code-mode-host` (src/package/personality.ts).
  .parseAsync(applyPersonality(process.argv, process.execPath, currentRuntime() === "bun-compiled"))
  .catch((e: unknown) => {
    const usage = e instanceof UsageError;
    process.stderr.write(`relay: ${e instanceof Error ? e.message : String(e)}\n`);
    if (!usage && process.env.RELAY_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exit(usage ? ExitCode.Usage : ExitCode.Failure);
  });
}
