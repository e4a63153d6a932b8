/**
 * Model-facing specs of the two process tools. The executor advertises them; the orchestrator
 * turns a call into the wire request (it picks the shell, final argv, cwd and env).
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import * as checks from "./exec-tools-checks.generated.ts";
import * as prompts from "./prompts.generated.ts";

export const ExecCommandArgsSchema = lazySchema(() =>
  z.object({
    cmd: z.string().min(1).describe("Shell command to run."),
    workdir: z
      .string()
      .optional()
      .describe("Working directory; relative paths resolve against the session's cwd. Defaults to the session's cwd."),
    shell: z.string().optional().describe("Shell binary to run the command with. Defaults to the user's shell."),
    login: z.boolean().optional().describe("Run the shell as a login shell (-lc instead of -c)."),
    tty: z
      .boolean()
      .optional()
      .describe(
        "Allocate a PTY so you can keep interacting through write_stdin (REPLs, prompts). Default false: stdin is closed.",
      ),
    yield_time_ms: z
      .number()
      .int()
      .optional()
      .describe(
        "How long to wait for the command before returning what it printed so far (250-30000, default 10000). The call returns as soon as the command exits.",
      ),
    max_output_tokens: z
      .number()
      .int()
      .optional()
      .describe("Token budget for the returned output (default 10000); the middle is cut when over."),
    sandbox_permissions: z
      .enum(["use_default", "require_escalated"])
      .optional()
      .describe(
        "Ask to run outside the sandbox with require_escalated; needs the user's approval and a justification.",
      ),
    justification: z
      .string()
      .optional()
      .describe("One sentence explaining why escalated permissions are needed; shown to the user."),
  }),
);

export const WriteStdinArgsSchema = lazySchema(() =>
  z.object({
    session_id: z.number().int().describe("The session ID that exec_command returned for a running process."),
    chars: z
      .string()
      .optional()
      .describe("Text to write to the process's stdin. Empty or omitted: just poll for new output."),
    yield_time_ms: z
      .number()
      .int()
      .optional()
      .describe(
        "How long to wait for output after writing (250-30000, default 250; an empty poll waits at least 5000 unless the process exits).",
      ),
    max_output_tokens: z.number().int().optional().describe("Token budget for the returned output (default 10000)."),
  }),
);

/**
 * The schemas of the exec_command and write_stdin arguments, by the names of their generated
 * checks (npm run build:validators writes them to exec-tools-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, {
  execCommandArgs: ExecCommandArgsSchema,
  writeStdinArgs: WriteStdinArgsSchema,
});

/** prompts/exec-command.md */
export const EXEC_COMMAND_DESCRIPTION = prompts.EXEC_COMMAND;

/** prompts/write-stdin.md */
export const WRITE_STDIN_DESCRIPTION = prompts.WRITE_STDIN;

/** Lines read_file returns when the call names no limit (a session quotes it in its hints). */
export const DEFAULT_READ_LIMIT = 2000;
