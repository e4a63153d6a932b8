/** `relay sandbox`: run one command under the policy the executor would apply, to see what it may do. */

import path from "node:path";
import { Command, Option } from "@commander-js/extra-typings";
import {
  SANDBOX_MECHANISMS,
  SANDBOX_MODES,
  type SandboxPolicy,
  SandboxPolicySchema,
} from "../contracts/sandbox-policy.ts";
import { describeAttempt, explainAttempt, runSandboxed } from "../sandbox/run.ts";
import { ExitCode, fail } from "./usage.ts";

const collect = (v: string, prev: string[] = []) => [...prev, v];

const SANDBOX_HELP = `
workspace-write (default): read and execute everywhere; write only under the workspace (-C, or
the current directory), each --writable-root and /dev/null-like devices. relay run's sessions
also allow the temp directories: add --tmp for exactly their policy.
.git and .relay inside a writable root stay read-only. read-only: no writes at all. Either way
the network is off (sockets other than Unix-domain are refused with EPERM, and named Unix
sockets outside the writable roots, such as docker.sock, are hidden) unless --network.
On Linux the built-in sandbox uses Landlock (ABI 3+, Linux 6.2+) and seccomp, with a user and
mount namespace for the read-only .git and the hidden sockets; nothing needs installing. Check
this host: relay doctor.

Exit status: the command's own; 126 when the sandbox cannot be applied (the reason is printed,
the command is not run), 127 when the command is not found, 2 for bad usage.

Examples:
  relay sandbox -- sh -c 'echo x > /tmp/out'          # refused: outside -C
  relay sandbox -C /tmp -- sh -c 'echo x > /tmp/out'  # allowed: inside -C
  relay sandbox --tmp -C ~/src/app -- npm test
  relay sandbox --network -- curl -sI https://example.com
  relay sandbox -s read-only --explain -- make

The flags are relay run's (-s/--sandbox, --sandbox-mechanism, --sandbox-best-effort); the older
--mode, --mechanism and --best-effort still work.`;

export function sandboxCommand() {
  return new Command("sandbox")
    .description("run one command under exactly the sandbox policy the executor would apply")
    .argument("<command...>", "the command and its arguments (options after the command are its own)")
    .passThroughOptions()
    .addOption(
      new Option("-s, --sandbox <mode>", "the sandbox mode, as relay run's -s (default: workspace-write)").choices(
        SANDBOX_MODES,
      ),
    )
    .addOption(new Option("--mode <mode>", "old name of --sandbox").choices(SANDBOX_MODES).hideHelp())
    .option("--writable-root <dir>", "another directory the command may write (workspace-write); repeatable", collect)
    .option("--network", "allow network access (workspace-write only; read-only never has it)")
    .option("-C, --cd <dir>", "run in this directory, which is also the workspace (default: the current directory)")
    .addOption(
      new Option(
        "--sandbox-mechanism <mechanism>",
        "auto (built-in Landlock + seccomp, else bubblewrap), landlock or bwrap (default: auto)",
      ).choices(SANDBOX_MECHANISMS),
    )
    .addOption(
      new Option("--mechanism <mechanism>", "old name of --sandbox-mechanism").choices(SANDBOX_MECHANISMS).hideHelp(),
    )
    .option("--sandbox-best-effort", "run with what the kernel can enforce, saying what it cannot, instead of refusing")
    .addOption(new Option("--best-effort", "old name of --sandbox-best-effort").hideHelp())
    .option(
      "--tmp",
      "workspace-write: also let the command write /tmp, /var/tmp, /dev/shm and $TMPDIR, as relay run's sessions do",
    )
    .option("--explain", "print the mechanism and the rules as JSON instead of running the command")
    .addHelpText("after", SANDBOX_HELP)
    .action(async (command, opts) => {
      const cwd = path.resolve(opts.cd ?? process.cwd());
      const mode = opts.sandbox ?? opts.mode ?? "workspace-write";
      const parsed = SandboxPolicySchema.safeParse({
        mode,
        writable_roots: [cwd, ...(opts.writableRoot ?? []).map((d) => path.resolve(d))],
        network: Boolean(opts.network) && mode === "workspace-write",
        tmp_writable: Boolean(opts.tmp),
        mechanism: opts.sandboxMechanism ?? opts.mechanism ?? "auto",
        best_effort: Boolean(opts.sandboxBestEffort || opts.bestEffort),
      });
      if (!parsed.success) fail(`invalid sandbox policy: ${parsed.error.message}`, ExitCode.Usage);
      const policy: SandboxPolicy = parsed.data;
      if (opts.explain) {
        const attempt = await describeAttempt({ policy, argv: command, cwd });
        process.stdout.write(
          `${JSON.stringify("error" in attempt ? { refused: attempt.error.message } : explainAttempt(attempt.ok), null, 2)}\n`,
        );
        process.exit("error" in attempt ? 126 : ExitCode.Ok);
      }
      process.exit(await runSandboxed({ policy, argv: command, cwd }));
    });
}
