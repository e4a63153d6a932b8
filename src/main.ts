#!/usr/bin/env bun
/**
 * The `relay` executable: one binary, many subcommands. The sandbox helper, which runs once
 * per sandboxed command, is dispatched before the command tree is even loaded.
 */
import { SANDBOX_EXEC_ARG } from "./executor/sandbox/linux/helper-arg.ts";

// No top-level await: `bun build --bytecode` compiles this entry as a script.
if (process.argv[2] === SANDBOX_EXEC_ARG) {
  void import("./executor/sandbox/linux/helper.ts").then((m) => m.sandboxExecMain(process.argv.slice(3)));
} else {
  void import("./cli/entry.ts").then((m) => m.runCli());
}
