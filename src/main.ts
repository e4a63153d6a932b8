#!/usr/bin/env bun
/**
 * The `relay` executable: one binary, many subcommands. The sandbox helper, which runs once
 * per sandboxed command, and a bare `--version` are dispatched before the command tree is even
 * loaded; a code-mode host starts compiling QuickJS's wasm first, on background threads, while
 * the rest loads.
 */
import { SANDBOX_EXEC_ARG } from "./sandbox/linux/helper-arg.ts";
import { compileEmbeddedWasm, QUICKJS_WASM_ASSET } from "./util/embedded-file.ts";

// No top-level await: `bun build --bytecode` compiles this entry as a script.
const first = process.argv[2];
if (first === SANDBOX_EXEC_ARG) {
  void import("./sandbox/linux/helper.ts").then((m) => m.sandboxExecMain(process.argv.slice(3)));
} else if ((first === "--version" || first === "-V") && process.argv.length === 3) {
  void import("./cli/version-line.ts").then((m) => m.printVersion());
} else {
  // As spawned by a session: `relay code-mode-host`, or a package's `relay-code-mode-host` (a
  // personality, src/package/personality.ts). Any other form still works, compiling later.
  const host =
    process.argv.length === 2
      ? /relay-code-mode-host(\.exe)?$/.test(process.execPath)
      : first === "code-mode-host" && process.argv.length === 3;
  // Started early and awaited where it is used (compileEmbeddedWasm catches its own failure).
  if (host) void compileEmbeddedWasm(QUICKJS_WASM_ASSET);
  // `relay run` starts its executor while its own command line, config and session are read
  // (the session takes it; one nobody takes ends with this process). Not with --verbose or
  // --executor, which change how the executor starts or which one runs.
  if (first === "run" && !process.argv.some((a) => /^(--verbose|--executor(=.*)?|-h|--help)$/.test(a)))
    void import("./protocol/early-spawn.ts").then((m) => m.spawnEarly("executor"));
  void import("./cli/entry.ts").then((m) => m.runCli());
}
