/**
 * The executor's wire contract. The orchestrator sends final argv, cwd and env (it owns
 * policy); the executor runs, buffers and slices output (it owns host-local execution).
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { isAbsolutePath } from "../util/predicates.ts";
import * as checks from "./executor-checks.generated.ts";
import { defineMethod, defineNotification, specSchemas } from "./method.ts";
import { SandboxPolicySchema } from "./sandbox-policy.ts";

export const ExecApprovalRequirementSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    /** Policy needs no approval for this command. */
    z.object({ type: z.literal("skip") }),
    /** Approval was required; `approved` records the user's (or policy's) answer. */
    z.object({ type: z.literal("needs_approval"), approved: z.boolean(), reason: z.string().optional() }),
    /** Policy forbids the command outright. */
    z.object({ type: z.literal("forbidden"), reason: z.string() }),
  ]),
);
export type ExecApprovalRequirement = z.infer<typeof ExecApprovalRequirementSchema>;

export const AdditionalPermissionsSchema = lazySchema(() =>
  z.object({
    network: z.boolean().optional(),
    writable_roots: z.array(z.string()).optional(),
  }),
);

export const ExecCommandRequestSchema = lazySchema(() =>
  z.object({
    command: z.array(z.string()).min(1, "command (argv) must not be empty"),
    cwd: z.string().refine(isAbsolutePath, "cwd must be an absolute path"),
    env: z.record(z.string(), z.string()),
    tty: z.boolean().default(false),
    yield_time_ms: z.number().int().min(0).optional(),
    max_output_tokens: z.number().int().min(0).optional(),
    sandbox_permissions: z.enum(["use_default", "require_escalated"]).default("use_default"),
    additional_permissions: AdditionalPermissionsSchema.optional(),
    additional_permissions_preapproved: z.boolean().default(false),
    justification: z.string().optional(),
    exec_approval_requirement: ExecApprovalRequirementSchema.default({ type: "skip" }),
    /** The sandbox attempt the orchestrator selected. */
    sandbox: SandboxPolicySchema.default({ mode: "danger-full-access", writable_roots: [], network: true }),
    /** Terminal size for tty=true. */
    cols: z.number().int().min(1).max(1000).optional(),
    rows: z.number().int().min(1).max(1000).optional(),
    /**
     * Keep the whole output of this process (up to 64 MiB, not just the 1 MiB head and tail) and,
     * whenever a result is cut for the model, hold its full text for `process/read_output`.
     */
    keep_full_output: z.boolean().default(false),
  }),
);
/** What a caller sends (defaults may be omitted). */
export type ExecCommandRequest = z.input<typeof ExecCommandRequestSchema>;
/** What the server handles (defaults applied). */
export type ExecCommandParams = z.output<typeof ExecCommandRequestSchema>;

export const WriteStdinRequestSchema = lazySchema(() =>
  z.object({
    process_id: z.number().int(),
    input: z.string().default(""),
    yield_time_ms: z.number().int().min(0).optional(),
    max_output_tokens: z.number().int().min(0).optional(),
  }),
);
export type WriteStdinRequest = z.input<typeof WriteStdinRequestSchema>;

export const ExecResultSchema = lazySchema(() =>
  z.object({
    /** 6 lowercase hex digits identifying this response. */
    chunk_id: z.string(),
    wall_time_seconds: z.number(),
    /** Present once the process has exited. */
    exit_code: z.number().int().optional(),
    /** Present only while the process is still running. */
    process_id: z.number().int().optional(),
    original_token_count: z.number().int(),
    total_lines: z.number().int(),
    truncated: z.boolean(),
    /** Bytes dropped between the buffer's head and tail before this slice was taken. */
    omitted_bytes: z.number().int(),
    output: z.string(),
    /** With keep_full_output, when `output` is cut: the full text, held for `process/read_output`. */
    full_output: z
      .object({
        id: z.string(),
        /** UTF-8 bytes of the full text. */
        bytes: z.number().int(),
        /** Output bytes missing from it too (over `limit_bytes`), replaced by a marker line. */
        dropped_bytes: z.number().int(),
        limit_bytes: z.number().int(),
        /** The 1-based lines of the full text that `output` cuts, first to last. */
        cut_lines: z.object({ from: z.number().int(), to: z.number().int() }),
      })
      .optional(),
  }),
);
export type ExecResult = z.infer<typeof ExecResultSchema>;
export type FullOutputInfo = NonNullable<ExecResult["full_output"]>;

/** A piece of a held full output, base64 (any bytes, a fixed 4/3 in a frame); the last piece frees it. */
export const ReadOutputRequestSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    offset: z.number().int().min(0),
    max_bytes: z
      .number()
      .int()
      .min(1)
      .max(8 * 1024 * 1024)
      .default(4 * 1024 * 1024),
  }),
);
export const ReadOutputResultSchema = lazySchema(() =>
  z.object({ data_base64: z.string(), next_offset: z.number().int(), done: z.boolean() }),
);

export const ProcessInfoSchema = lazySchema(() =>
  z.object({
    process_id: z.number().int(),
    pid: z.number().int(),
    command: z.array(z.string()),
    cwd: z.string(),
    tty: z.boolean(),
    running: z.boolean(),
    exit_code: z.number().int().optional(),
    started_at: z.string(),
    last_used_at: z.string(),
  }),
);

export const ToolSpecSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    /** JSON schema of the model-facing arguments. */
    input_schema: z.record(z.string(), z.unknown()),
    read_only: z.boolean(),
    /** How the orchestrator calls it: `process/exec`, `process/write` or generic `tools/call`. */
    route: z.enum(["exec", "write_stdin", "call"]),
  }),
);
export type ToolSpec = z.infer<typeof ToolSpecSchema>;

export const ExecutorInfoSchema = lazySchema(() =>
  z.object({
    version: z.string(),
    runtime: z.string(),
    platform: z.string(),
    arch: z.string(),
    hostname: z.string(),
    pid: z.number().int(),
    home: z.string(),
    pty: z.boolean(),
    sandbox: z.object({
      available: z.boolean(),
      mechanism: z.string(),
      detail: z.string(),
      /** Whether sandboxed commands cannot outlive the executor (its container), and what holds otherwise. */
      containment: z.object({ enforced: z.boolean(), detail: z.string() }).optional(),
      /** Sandboxed pipe-mode commands that found a warm helper, and those that started one. */
      warm_helpers: z.object({ hits: z.number().int(), misses: z.number().int() }).optional(),
    }),
  }),
);
export type ExecutorInfo = z.infer<typeof ExecutorInfoSchema>;

export const ExecutorInfoRequestSchema = lazySchema(() =>
  z
    .object({
      /**
       * `wait` (the default): start the process container for sandboxed commands and report on
       * it in `sandbox.containment`. `start`: start it and answer at once, without that field; a
       * session does not show it, and its first sandboxed command waits for the container anyway.
       * `later`: leave it to the first command that needs it (a danger-full-access session,
       * whose commands never do, does not pay for it while it starts).
       */
      containment: z.enum(["wait", "start", "later"]).default("wait"),
    })
    .optional(),
);

export const ToolCallRequestSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    arguments: z.unknown(),
    cwd: z.string(),
    sandbox: SandboxPolicySchema.default({ mode: "danger-full-access", writable_roots: [], network: true }),
  }),
);

export const ToolCallResultSchema = lazySchema(() =>
  z.object({
    text: z.string(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
);

/** Whether a policy can be enforced here, and how; asked once when a session starts. */
export const SandboxCheckRequestSchema = lazySchema(() =>
  z.object({
    sandbox: SandboxPolicySchema,
    cwd: z.string(),
    env: z.record(z.string(), z.string()).default({}),
  }),
);
export const SandboxCheckResultSchema = lazySchema(() =>
  z.object({ mechanism: z.string(), gaps: z.array(z.string()) }),
);

/** A command the executor's own policy refused; nothing ran. */
const POLICY_ERRORS = ["forbidden", "approval_required", "escalation_not_approved"] as const;
/** The sandbox could not confine the command as asked (or start its helper); nothing ran. */
const SANDBOX_ERRORS = [
  "sandbox_unavailable",
  "sandbox_native",
  "no_container",
  "no_self_command",
  "invalid_command_line",
] as const;
/** The command could not be started. */
const SPAWN_ERRORS = ["invalid_request", "invalid_command_line", "spawn_failed", "tty_unavailable"] as const;
/** Writing to a running command's stdin failed. */
const STDIN_ERRORS = ["stdin_closed", "write_failed"] as const;

/**
 * Why a file tool (tools/call) failed: bad arguments, a path it cannot use, the sandbox's
 * refusal, an I/O error, a patch that does not apply, or the call being cancelled.
 */
export const TOOL_ERRORS = [
  "unknown_tool",
  "invalid_arguments",
  "not_found",
  "not_a_directory",
  "not_a_file",
  "is_directory",
  "binary_file",
  "permission_denied",
  "sandbox_denied",
  "io_error",
  "invalid_patch",
  "patch_failed",
  "aborted",
] as const;
export type ToolErrorCode = (typeof TOOL_ERRORS)[number];

export const ExecutorMethods = {
  info: defineMethod("executor/info", ExecutorInfoRequestSchema, ExecutorInfoSchema, []),
  toolsList: defineMethod(
    "tools/list",
    lazySchema(() => z.object({}).optional()),
    lazySchema(() => z.object({ tools: z.array(ToolSpecSchema) })),
    [],
  ),
  toolsCall: defineMethod("tools/call", ToolCallRequestSchema, ToolCallResultSchema, TOOL_ERRORS),
  exec: defineMethod("process/exec", ExecCommandRequestSchema, ExecResultSchema, [
    ...POLICY_ERRORS,
    ...SANDBOX_ERRORS,
    ...SPAWN_ERRORS,
    ...STDIN_ERRORS,
  ]),
  write: defineMethod("process/write", WriteStdinRequestSchema, ExecResultSchema, ["unknown_process", ...STDIN_ERRORS]),
  readOutput: defineMethod("process/read_output", ReadOutputRequestSchema, ReadOutputResultSchema, ["unknown_output"]),
  terminate: defineMethod(
    "process/terminate",
    lazySchema(() => z.object({ process_id: z.number().int() })),
    lazySchema(() => z.object({ running: z.boolean() })),
    [],
  ),
  sandboxCheck: defineMethod("sandbox/check", SandboxCheckRequestSchema, SandboxCheckResultSchema, SANDBOX_ERRORS),
  list: defineMethod(
    "process/list",
    lazySchema(() => z.object({}).optional()),
    lazySchema(() => z.object({ processes: z.array(ProcessInfoSchema) })),
    [],
  ),
} as const;

/** Sent when a stored process exits, so an orchestrator can tell its session. */
export const ProcessExitedNotification = defineNotification(
  "process/exited",
  lazySchema(() => z.object({ process_id: z.number().int(), exit_code: z.number().int() })),
);

/**
 * The schemas an executor peer reads off the wire, by the names of their generated checks
 * (npm run build:validators writes them to protocol-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(checks, {
  ...specSchemas(ExecutorMethods),
  ...specSchemas({ processExited: ProcessExitedNotification }),
});
