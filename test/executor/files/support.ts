/** Helpers shared by the file tool and apply_patch tests (not a test file itself). */
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SandboxPolicy } from "../../../src/contracts/sandbox-policy.ts";
import { type ExecutorTool, parseToolArgs, type ToolContext, type ToolOutput } from "../../../src/executor/tool.ts";
import type { ErrorValue, Result } from "../../../src/util/result.ts";

export const FULL: SandboxPolicy = { mode: "danger-full-access", writable_roots: [], network: false };

/** Runs `fn` with a fresh real temp directory (symlinks resolved) that is removed afterwards. */
export async function withTmp<T>(fn: (dir: string) => Promise<T> | T): Promise<T> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "relay-files-")));
  try {
    return await fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function makeCtx(cwd: string, sandbox: SandboxPolicy = FULL, signal?: AbortSignal): ToolContext {
  return { cwd, sandbox, signal: signal ?? new AbortController().signal };
}

/** Validates raw arguments the way the executor does, then runs the tool. */
export async function run(tool: ExecutorTool, raw: unknown, ctx: ToolContext): Promise<Result<ToolOutput>> {
  const args = parseToolArgs(tool, raw);
  if ("error" in args) return args;
  return tool.execute(args.ok, ctx);
}

export function okText(r: Result<ToolOutput>): string {
  if ("error" in r) assert.fail(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.ok.text;
}

export function errOf(r: Result<unknown>, code: string): ErrorValue {
  if (!("error" in r)) assert.fail(`expected error ${code}, got success: ${JSON.stringify(r.ok).slice(0, 300)}`);
  assert.equal(r.error.code, code, r.error.message);
  return r.error;
}

export function write(file: string, content: string | Uint8Array): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  return file;
}
