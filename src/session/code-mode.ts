/**
 * `relay run --code-mode`: the model-facing `exec` (freeform JS) and `wait` tools, backed by a
 * code-mode session on a `code-mode-host` process. Nested `tools.*` calls go through the
 * session's ToolRouter. Output text follows the reference layout: status header, wall time,
 * `Output:`, then the script's text items.
 */
import { z } from "zod";
import {
  CodeModeErrorCode,
  cellOf,
  DEFAULT_EXEC_YIELD_TIME_MS,
  missingCell,
  type RuntimeResponse,
  type ToolDefinition,
  type WaitOutcome,
} from "../contracts/code-mode.ts";
import type { CodeModeProvider, CodeModeSession } from "../contracts/code-mode-provider.ts";
import type { ExecResult } from "../contracts/executor.ts";
import { parseToolArguments } from "../contracts/tool-args.ts";
import type { ToolCallOutcome } from "../contracts/tool-outcome.ts";
import type { ModelTool } from "../model/client.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { truncateMiddle } from "../util/truncate.ts";
import { HostProvider } from "./code-mode-host/provider.ts";
import * as prompts from "./prompts.generated.ts";

export const EXEC_TOOL = "exec";
export const WAIT_TOOL = "wait";
export const DEFAULT_WAIT_YIELD_TIME_MS = 10_000;
export const DEFAULT_MAX_OUTPUT_TOKENS_PER_EXEC_CALL = 10_000;

/** What code mode needs from the session's router. */
export interface NestedToolRunner {
  readonly specs: ReadonlyArray<{ name: string; description: string }>;
  call(name: string, rawArguments: string, signal?: AbortSignal, callId?: string): Promise<ToolCallOutcome>;
}

const WaitArgsSchema = lazySchema(() =>
  z.object({
    cell_id: z.string().min(1),
    yield_time_ms: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    max_tokens: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    terminate: z.boolean().optional(),
  }),
);

export function codeModeModelTools(): ModelTool[] {
  return [
    { kind: "custom", name: EXEC_TOOL, description: prompts.CODE_MODE_EXEC },
    {
      kind: "function",
      name: WAIT_TOOL,
      description: prompts.CODE_MODE_WAIT,
      parameters: {
        type: "object",
        properties: {
          cell_id: { type: "string", description: "the cell ID exec returned" },
          yield_time_ms: { type: "number", description: "how long to wait for more output (default 10000)" },
          max_tokens: { type: "number", description: "output token budget (default 10000)" },
          terminate: { type: "boolean", description: "stop the cell" },
        },
        required: ["cell_id"],
        additionalProperties: false,
      },
    },
  ];
}

export interface ExecPragma {
  yield_time_ms?: number;
  max_output_tokens?: number;
}

/** Splits the optional `// @exec: {...}` first line from the source. */
export function parseExecInput(input: string): Result<{ source: string; pragma: ExecPragma }> {
  if (input.trim() === "") {
    return err(
      "invalid_exec_input",
      'exec expects raw JavaScript source (not JSON, no code fences), optionally starting with a line like // @exec: {"yield_time_ms": 10000}',
    );
  }
  const m = /^\s*\/\/\s*@exec:(.*)(?:\r?\n|$)/.exec(input);
  if (!m) return ok({ source: input, pragma: {} });
  let raw: unknown;
  try {
    raw = JSON.parse(m[1]!.trim());
  } catch (e) {
    return err("invalid_exec_input", `the // @exec: pragma must be a JSON object: ${(e as Error).message}`);
  }
  const safe = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
  const parsed = z
    .object({ yield_time_ms: safe.optional(), max_output_tokens: safe.optional() })
    .strict()
    .safeParse(raw);
  if (!parsed.success)
    return err(
      "invalid_exec_input",
      `the // @exec: pragma allows only yield_time_ms and max_output_tokens as non-negative integers: ${z.prettifyError(parsed.error)}`,
    );
  const source = input.slice(m[0].length);
  if (source.trim() === "")
    return err("invalid_exec_input", "the // @exec: pragma must be followed by JavaScript source");
  return ok({ source, pragma: parsed.data });
}

/** The JSON a script gets from `tools.exec_command` / `tools.write_stdin` (the reference's code-mode shape). */
export function execResultJson(r: ExecResult): Record<string, unknown> {
  return {
    chunk_id: r.chunk_id,
    wall_time_seconds: r.wall_time_seconds,
    ...(r.exit_code !== undefined ? { exit_code: r.exit_code } : {}),
    ...(r.process_id !== undefined ? { session_id: r.process_id } : {}),
    original_token_count: r.original_token_count,
    output: r.output,
  };
}

/** The model-facing text of a runtime response. */
export function formatRuntimeResponse(
  r: RuntimeResponse,
  wallMs: number,
  maxTokens: number,
  notes: string[] = [],
): ToolCallOutcome {
  const cell = cellOf(r);
  let status: string;
  let errorText: string | null = null;
  if ("Yielded" in r) status = `Script running with cell ID ${cell.cell_id}`;
  else if ("Terminated" in r) status = "Script terminated";
  else {
    errorText = r.Result.error_text;
    status = errorText === null ? "Script completed" : "Script failed";
  }
  const parts = [
    ...notes.map((n) => `Notification: ${n}`),
    ...cell.content_items.map((i) => (i.type === "input_text" ? i.text : `[image ${i.image_url.slice(0, 40)}]`)),
  ];
  if (errorText !== null) parts.push(`Script error:\n${errorText}`);
  const body = truncateMiddle(parts.join("\n"), maxTokens).text;
  return {
    output: `${status}\nWall time ${(wallMs / 1000).toFixed(1)} seconds\nOutput:\n${body}`,
    success: errorText === null,
    display: status,
  };
}

/** One relay session's code mode: started ahead of the first exec, reopened on a fresh host after a crash. */
export class CodeModeTools {
  private session: CodeModeSession | undefined;
  private opening: Promise<Result<CodeModeSession>> | undefined;
  private notes: string[] = [];

  constructor(
    private readonly runner: NestedToolRunner,
    private readonly provider: CodeModeProvider = new HostProvider(),
  ) {}

  handles(name: string): boolean {
    return name === EXEC_TOOL || name === WAIT_TOOL;
  }

  private enabledTools(): ToolDefinition[] {
    return this.runner.specs.map((s) => ({ name: s.name, description: s.description, kind: "function" as const }));
  }

  /**
   * Starts the host and opens the session in the background, so the first exec does not wait
   * for a process to start (about 0.2 s compiled, 0.4 s from source): the model's first answer
   * takes longer than that. A failure is reported by the first exec, which tries again.
   * Resolves once the session is open or failed (callers need not wait; tests do).
   */
  prestart(): Promise<void> {
    return this.open().then(() => {});
  }

  private async open(): Promise<Result<CodeModeSession>> {
    if (this.session) return ok(this.session);
    this.opening ??= this.provider.openSession({
      invokeTool: async (call, signal) => {
        if (call.tool_name === EXEC_TOOL) return err("invalid_tool", "exec cannot invoke itself");
        const args = call.input === undefined ? "{}" : JSON.stringify(call.input);
        const out = await this.runner.call(
          call.tool_name,
          args,
          signal,
          `${call.call_id}.${call.runtime_tool_call_id}`,
        );
        // A command that ran resolves (exit_code tells how it went); a call that could not run rejects.
        if (out.codeModeResult !== undefined) return ok(out.codeModeResult);
        return out.success ? ok(out.output) : err("tool_failed", out.output);
      },
      notify: (n) => {
        if (n.text.trim()) this.notes.push(n.text);
      },
    });
    const r = await this.opening;
    this.opening = undefined;
    if ("ok" in r) this.session = r.ok;
    return r;
  }

  private takeNotes(): string[] {
    const n = this.notes;
    this.notes = [];
    return n;
  }

  private dropIfDead(r: Result<unknown>): void {
    if ("error" in r && r.error.code === CodeModeErrorCode.HostDied) this.session = undefined;
  }

  async exec(callId: string, input: string, signal?: AbortSignal): Promise<ToolCallOutcome> {
    const parsed = parseExecInput(input);
    if ("error" in parsed) return { output: parsed.error.message, success: false, display: EXEC_TOOL };
    const s = await this.open();
    if ("error" in s) return { output: `exec failed: ${s.error.message}`, success: false, display: EXEC_TOOL };
    const started = performance.now();
    const r = await s.ok.execute(
      {
        tool_call_id: callId,
        enabled_tools: this.enabledTools(),
        source: parsed.ok.source,
        yield_time_ms: parsed.ok.pragma.yield_time_ms ?? DEFAULT_EXEC_YIELD_TIME_MS,
      },
      signal,
    );
    this.dropIfDead(r);
    if ("error" in r) return { output: `exec failed: ${r.error.message}`, success: false, display: EXEC_TOOL };
    return formatRuntimeResponse(
      r.ok,
      performance.now() - started,
      parsed.ok.pragma.max_output_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS_PER_EXEC_CALL,
      this.takeNotes(),
    );
  }

  async wait(rawArguments: string): Promise<ToolCallOutcome> {
    const raw = parseToolArguments(rawArguments);
    if ("error" in raw) return { output: raw.error.message, success: false, display: WAIT_TOOL };
    const parsed = WaitArgsSchema.safeParse(raw.ok);
    if (!parsed.success)
      return {
        output: `The wait tool was called with invalid arguments: ${z.prettifyError(parsed.error)}`,
        success: false,
        display: WAIT_TOOL,
      };
    const args = parsed.data;
    const s = this.session;
    if (!s) return formatRuntimeResponse(missingCell(args.cell_id), 0, DEFAULT_MAX_OUTPUT_TOKENS_PER_EXEC_CALL);
    const started = performance.now();
    const r: Result<WaitOutcome> = args.terminate
      ? await s.terminate(args.cell_id)
      : await s.wait(args.cell_id, args.yield_time_ms ?? DEFAULT_WAIT_YIELD_TIME_MS);
    this.dropIfDead(r);
    if ("error" in r) return { output: `wait failed: ${r.error.message}`, success: false, display: WAIT_TOOL };
    const resp = "LiveCell" in r.ok ? r.ok.LiveCell : r.ok.MissingCell;
    return formatRuntimeResponse(
      resp,
      performance.now() - started,
      args.max_tokens ?? DEFAULT_MAX_OUTPUT_TOKENS_PER_EXEC_CALL,
      this.takeNotes(),
    );
  }

  async close(): Promise<void> {
    await this.session?.shutdown();
    this.session = undefined;
    await this.provider.close();
  }
}
