#!/usr/bin/env bun
/**
 * The `relay` executable: one binary, many subcommands. The sandbox helper, which runs once
 * per sandboxed command, and a bare `--version` are dispatched before the command tree is even
 * loaded.
 */
import { SANDBOX_EXEC_ARG } from "./executor/sandbox/linux/helper-arg.ts";

// No top-level await: `bun build --bytecode` compiles this entry as a script.
const first = process.argv[2];
if (first === SANDBOX_EXEC_ARG) {
  void import("./executor/sandbox/linux/helper.ts").then((m) => m.sandboxExecMain(process.argv.slice(3)));
} else if ((first === "--version" || first === "-V") && process.argv.length === 3) {
  void import("./cli/version-line.ts").then((m) => m.printVersion());
} else {
  void import("./cli/entry.ts").then((m) => m.runCli());
}
