/**
 * Host-local tools the executor advertises. A tool validates its own arguments with zod,
 * returns text for the model, and reports failure as a value (never throws to the caller).
 */
import { z } from "zod";
import type { ToolErrorCode } from "../contracts/executor.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { err, type Result } from "../util/result.ts";

export interface ToolContext {
  /** Absolute directory that relative paths in the arguments resolve against. */
  readonly cwd: string;
  readonly sandbox: SandboxPolicy;
  readonly signal: AbortSignal;
}

export interface ToolOutput {
  /** What the model reads. */
  text: string;
  /** Structured extras for UIs and rollouts (paths touched, counts...). */
  metadata?: Record<string, unknown>;
}

export interface ExecutorTool<P extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: P;
  /** True when the tool never changes the host, so calls may run in parallel. */
  readonly readOnly: boolean;
  execute(args: z.output<P>, ctx: ToolContext): Promise<Result<ToolOutput, ToolErrorCode>>;
}

export function defineTool<P extends z.ZodType>(tool: ExecutorTool<P>): ExecutorTool<P> {
  return tool;
}

/** Validates raw model arguments; the message is written for the model to fix its call. */
export function parseToolArgs<P extends z.ZodType>(
  tool: ExecutorTool<P>,
  raw: unknown,
): Result<z.output<P>, "invalid_arguments"> {
  const parsed = tool.parameters.safeParse(raw);
  if (parsed.success) return { ok: parsed.data };
  return err(
    "invalid_arguments",
    `The ${tool.name} tool was called with invalid arguments: ${z.prettifyError(parsed.error)}\nRewrite the call so it matches the tool's schema.`,
  );
}
