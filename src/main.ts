#!/usr/bin/env bun
/** The `relay` executable: one binary, many subcommands. */
import { buildProgram } from "./cli/program.ts";
import { ExitCode, UsageError } from "./cli/usage.ts";
import { applyPersonality } from "./package/personality.ts";
import { currentRuntime } from "./protocol/child.ts";

// No top-level await: `bun build --bytecode` compiles this entry as a script.
buildProgram()
  // A packaged copy named relay-code-mode-host acts as `relay code-mode-host` (src/package/personality.ts).
  .parseAsync(applyPersonality(process.argv, process.execPath, currentRuntime() === "bun-compiled"))
  .catch((e: unknown) => {
    const usage = e instanceof UsageError;
    process.stderr.write(`relay: ${e instanceof Error ? e.message : String(e)}\n`);
    if (!usage && process.env.RELAY_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exit(usage ? ExitCode.Usage : ExitCode.Failure);
  });
