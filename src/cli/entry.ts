/** Runs the relay command tree (everything but the sandbox helper, which src/main.ts starts itself). */
import { applyPersonality } from "../package/personality.ts";
import { currentRuntime } from "../protocol/child.ts";
import { buildProgram } from "./program.ts";
import { ExitCode, UsageError } from "./usage.ts";

export function runCli(): void {
  buildProgram()
  // A packaged copy named relay-code-mode-host acts as `relay code-mode-host` (src/package/personality.ts).
  .parseAsync(applyPersonality(process.argv, process.execPath, currentRuntime() === "bun-compiled"))
  .catch((e: unknown) => {
    const usage = e instanceof UsageError;
    process.stderr.write(`relay: ${e instanceof Error ? e.message : String(e)}\n`);
    if (!usage && process.env.RELAY_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exit(usage ? ExitCode.Usage : ExitCode.Failure);
  });
}
