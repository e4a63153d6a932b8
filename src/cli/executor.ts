import { Command } from "@commander-js/extra-typings";
import { checkExecutor } from "./executor-check.ts";
import { wholeNumber } from "./number-flag.ts";
import { serveExecutorMain } from "./serve-executor.ts";

export function executorCommand() {
  return new Command("executor")
    .description("serve host-local tools (exec_command, write_stdin, file tools) over the framed protocol on stdio")
    .option("--frame-limit <bytes>", "maximum frame size in bytes (default 16 MiB)", wholeNumber("--frame-limit"))
    .option("--check", "instead of serving: start an executor, print what it offers and run a test command through it")
    .option(
      "--executor <command-line>",
      'with --check: the executor to start, e.g. "ssh build-host relay executor" (default: this relay)',
    )
    .option("--json", "with --check: print the report as JSON")
    .addHelpText(
      "after",
      `
The executor is started by \`relay run\` (or any orchestrator) and speaks the framed protocol on
stdin/stdout; it is not meant to be typed at (try \`relay executor --check\`). Any command line that gives such a pipe is a
remote executor, e.g. \`relay run --executor "ssh build-host relay executor" ...\`.

Methods: executor/info, tools/list, tools/call, process/exec, process/write,
process/terminate, process/list, sandbox/check; notification process/exited. MCP stdio
servers of a capability root's .mcp.json: mcp/manifest, mcp/start, mcp/send, mcp/stop;
notifications mcp/message, mcp/bad_line, mcp/exited (docs/capabilities.md).

Processes: tty=true runs on a PTY (Bun builds), otherwise on pipes with stdin closed. Each
process keeps 1 MiB of output (head + tail); at most 64 stay open (least recently used exited
ones are pruned first). When the executor exits, for any reason including SIGKILL, every
process it started is killed with its whole tree.

Sandbox: read-only and workspace-write are applied by relay itself on Linux (Landlock +
seccomp, and a user + mount namespace that keeps .git read-only; nothing to install), by
bubblewrap when asked for (mechanism bwrap) or when the built-in one cannot run, and by
Seatbelt on macOS. If a requested sandbox cannot be applied the command is refused with what
is missing and the choices; danger-full-access runs without a sandbox. See relay doctor and
relay sandbox --help.`,
    )
    .action(async (opts) => {
      if (opts.check) process.exit(await checkExecutor(opts.executor, Boolean(opts.json)));
      await serveExecutorMain(opts.frameLimit);
    });
}
