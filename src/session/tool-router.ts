/**
 * Routes the model's tool calls to the executor. The tool list comes from the executor
 * (`tools/list`); this side turns a call into the final wire request: shell and argv, cwd,
 * environment, approval, sandbox attempt and output budget.
 */

import path from "node:path";
import { z } from "zod";
import type { UserApprovalRule } from "../config/approval-rules.ts";
import type { ApprovalPolicy } from "../config/config.ts";
import { ExecCommandArgsSchema, WriteStdinArgsSchema } from "../contracts/exec-tools.ts";
import {
  type ExecApprovalRequirement,
  type ExecResult,
  ExecutorMethods,
  type ToolSpec,
} from "../contracts/executor.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { parseToolArguments } from "../contracts/tool-args.ts";
import type { ToolCallOutcome } from "../contracts/tool-outcome.ts";
import type { McpToolSource } from "../mcp/servers.ts";
import type { ModelTool } from "../model/client.ts";
import {
  type ApprovalCache,
  type ApprovalNeed,
  evaluateExec,
  evaluateMcpTool,
  evaluatePatch,
} from "../policy/approval.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { loadBashGrammar } from "../util/bash-grammar.ts";
import { fastParse } from "../util/fast-parse.ts";
import { err, ok, type Result } from "../util/result.ts";
import { type CodeModeTools, codeModeModelTools, EXEC_TOOL, execResultJson, WAIT_TOOL } from "./code-mode.ts";
import { formatExecResult } from "./exec-format.ts";
import { fetchFullOutput, fullOutputNote, type OutputSpill } from "./output-spill.ts";
import { commandArgv, pickShell } from "./shell.ts";

export interface RouterSettings {
  cwd: string;
  env: Record<string, string>;
  approvalPolicy: ApprovalPolicy;
  /** config.toml's `[[approval_rules]]`, for untrusted. */
  approvalRules?: readonly UserApprovalRule[];
  sandbox: SandboxPolicy;
  shellPath?: string;
  loginShell: boolean;
  /** Upper bound and default for max_output_tokens. */
  maxOutputTokens: number;
  defaultYieldMs: number;
  /** Keep writes inside `sandbox.writable_roots` even when a call names another workdir. */
  pinWritableRoots?: boolean;
  /** Where the full text of an exec output cut for the model is saved; unset: it is not kept. */
  outputs?: OutputSpill;
}

/** `apply_patch <<'EOF' ... EOF` written as a shell command is applied as a patch. */
const HEREDOC_PATCH = /^\s*apply_patch\s+<<\s*['"]?([A-Za-z_]+)['"]?\s*\n([\s\S]*?)\n\1\s*$/;

/** A tool this side answers itself (the `skill` tool): listed beside the executor's, called here. */
export interface SessionTool {
  spec: ToolSpec;
  call(rawArguments: string, signal?: AbortSignal): Promise<ToolCallOutcome>;
}

/** The executor's tools/list answer. */
export async function listExecutorTools(executor: RpcPeer): Promise<Result<ToolSpec[]>> {
  const listed = await executor.call(ExecutorMethods.toolsList, {}, { timeoutMs: 30_000 });
  return "error" in listed ? listed : ok(listed.ok.tools);
}

export class ToolRouter {
  private codeMode: CodeModeTools | undefined;
  private readonly sessionTools = new Map<string, SessionTool>();
  private mcp: McpToolSource | undefined;

  private constructor(
    private readonly executor: RpcPeer,
    /** The executor's tools. */
    readonly executorSpecs: ToolSpec[],
    private readonly settings: RouterSettings,
    private readonly approvals: ApprovalCache,
  ) {}

  /**
   * A router over the executor's tools; `listing` is the answer to a tools/list the caller may
   * have sent early (the session asks as soon as the executor is up), else it is asked now.
   */
  static async connect(
    executor: RpcPeer,
    settings: RouterSettings,
    approvals: ApprovalCache,
    listing = listExecutorTools(executor),
  ): Promise<Result<ToolRouter>> {
    // Approval reads commands with the bash grammar: load it while the model thinks (a failure
    // is reported by the first check, which asks).
    if (settings.approvalPolicy === "untrusted") loadBashGrammar().catch(() => {});
    const listed = await listing;
    if ("error" in listed)
      return err(listed.error.code, `could not list the executor's tools: ${listed.error.message}`);
    return ok(new ToolRouter(executor, listed.ok, settings, approvals));
  }

  /** The tools answered without MCP: the executor's, then the session's own. */
  private get ownSpecs(): ToolSpec[] {
    return [...this.executorSpecs, ...[...this.sessionTools.values()].map((t) => t.spec)];
  }

  addSessionTool(tool: SessionTool): void {
    this.sessionTools.set(tool.spec.name, tool);
  }

  get cwd(): string {
    return this.settings.cwd;
  }

  /** Every tool a call can name: the executor's, the session's own, then the MCP servers' (code mode offers these as tools.*). */
  get specs(): ReadonlyArray<{ name: string; description: string }> {
    return this.mcp ? [...this.ownSpecs, ...this.mcp.toolList] : this.ownSpecs;
  }

  modelTools(): ModelTool[] {
    const tools: ModelTool[] = this.ownSpecs.map((s) => ({
      kind: "function",
      name: s.name,
      description: s.description,
      parameters: s.input_schema,
    }));
    if (this.mcp) tools.push(...this.mcp.modelTools());
    return this.codeMode ? [...tools, ...codeModeModelTools()] : tools;
  }

  /** The session's MCP servers: their tools are offered and routed like the executor's. */
  attachMcp(mcp: McpToolSource): void {
    this.mcp = mcp;
  }

  /** `--code-mode`: offers `exec` (custom) and `wait`, and routes them to code mode. */
  attachCodeMode(codeMode: CodeModeTools): void {
    this.codeMode = codeMode;
  }

  /** A custom (freeform) tool call: only code mode's `exec` exists. */
  async callCustom(name: string, input: string, callId: string, signal?: AbortSignal): Promise<ToolCallOutcome> {
    if (this.codeMode && name === EXEC_TOOL) return this.codeMode.exec(callId, input, signal);
    return { output: `tool ${name} is not available in this session`, success: false, display: name };
  }

  isReadOnly(name: string): boolean {
    if (this.mcp?.has(name)) return this.mcp.isReadOnly(name);
    return this.ownSpecs.find((s) => s.name === name)?.read_only ?? false;
  }

  /** `callId` names the file a cut output's full text is saved in. */
  async call(name: string, rawArguments: string, signal?: AbortSignal, callId?: string): Promise<ToolCallOutcome> {
    if (this.codeMode && name === WAIT_TOOL) return this.codeMode.wait(rawArguments);
    const own = this.sessionTools.get(name);
    if (own) return own.call(rawArguments, signal);
    if (this.mcp?.has(name)) return this.callMcp(this.mcp, name, rawArguments, signal);
    const spec = this.executorSpecs.find((s) => s.name === name);
    if (!spec)
      return {
        output: `unknown tool ${JSON.stringify(name)}; available tools: ${this.specs.map((s) => s.name).join(", ")}`,
        success: false,
        display: name,
      };
    const parsed = parseToolArguments(rawArguments);
    if ("error" in parsed) return { output: parsed.error.message, success: false, display: name };
    const args = parsed.ok;
    if (spec.route === "exec") return this.execCommand(args, signal, callId);
    if (spec.route === "write_stdin") return this.writeStdin(args, signal, callId);
    return this.callTool(spec.name, args, signal);
  }

  /** An MCP tool: the same approval policy as the executor's tools (read-only ones may skip asking). */
  private async callMcp(
    mcp: McpToolSource,
    name: string,
    rawArguments: string,
    signal?: AbortSignal,
  ): Promise<ToolCallOutcome> {
    const parsed = parseToolArguments(rawArguments);
    if ("error" in parsed) return { output: parsed.error.message, success: false, display: name };
    const args = parsed.ok;
    if (args === null || typeof args !== "object" || Array.isArray(args))
      return {
        output: `${name} takes a JSON object of arguments (got ${JSON.stringify(args)?.slice(0, 100)})`,
        success: false,
        display: name,
      };
    const approval = await this.approve(
      evaluateMcpTool(
        this.settings.approvalPolicy,
        name,
        mcp.isReadOnly(name),
        JSON.stringify(args),
        this.settings.cwd,
      ),
    );
    if ("error" in approval)
      return { output: `${name} was not called: ${approval.error.message}`, success: false, display: name };
    return mcp.call(name, args as Record<string, unknown>, signal);
  }

  private resolveDir(workdir: string | undefined): string {
    if (!workdir) return this.settings.cwd;
    return path.resolve(this.settings.cwd, workdir);
  }

  private async approve(need: ApprovalNeed): Promise<Result<ExecApprovalRequirement>> {
    if (need.type === "skip") return ok({ type: "skip" });
    if (need.type === "refuse") return err("refused", need.reason);
    if (!this.approvals.interactive) {
      return err(
        "approval_unavailable",
        `this needs the user's approval (approval policy ${this.settings.approvalPolicy}), but relay is not running on a terminal, so it was not run. ` +
          (need.request.reason ? `It needs approval because ${need.request.reason}. ` : "") +
          `Do the work without it, or the user can rerun with --approval never to let commands run in the sandbox without asking.`,
      );
    }
    const d = await this.approvals.decide(need.request);
    if (d === "denied") return err("denied", `the user declined: ${need.request.summary}`);
    return ok({ type: "needs_approval", approved: true });
  }

  private async execCommand(raw: unknown, signal?: AbortSignal, callId?: string): Promise<ToolCallOutcome> {
    const parsed = fastParse(ExecCommandArgsSchema, raw);
    if (!parsed.success) return invalid("exec_command", parsed.error);
    const a = parsed.data;
    const heredoc = HEREDOC_PATCH.exec(a.cmd);
    if (heredoc) return this.callTool("apply_patch", { input: heredoc[2] }, signal, a.workdir);
    const cwd = this.resolveDir(a.workdir);
    const escalate = a.sandbox_permissions === "require_escalated";
    const approval = await this.approve(
      await evaluateExec(
        this.settings.approvalPolicy,
        a.cmd,
        cwd,
        escalate,
        a.justification,
        this.settings.approvalRules,
      ),
    );
    if ("error" in approval)
      return { output: `exec_command was not run: ${approval.error.message}`, success: false, display: a.cmd };
    const shell = pickShell({
      requested: a.shell,
      configured: this.settings.shellPath,
      login: a.login ?? this.settings.loginShell,
    });
    const r = await this.executor.call(
      ExecutorMethods.exec,
      {
        command: commandArgv(shell, a.cmd, a.login ?? this.settings.loginShell),
        cwd,
        env: this.settings.env,
        tty: a.tty ?? false,
        yield_time_ms: a.yield_time_ms ?? this.settings.defaultYieldMs,
        max_output_tokens: Math.min(
          a.max_output_tokens ?? this.settings.maxOutputTokens,
          this.settings.maxOutputTokens,
        ),
        sandbox_permissions: escalate ? "require_escalated" : "use_default",
        additional_permissions_preapproved: false,
        justification: a.justification,
        exec_approval_requirement: approval.ok,
        sandbox: this.settings.pinWritableRoots
          ? this.settings.sandbox
          : { ...this.settings.sandbox, writable_roots: [...new Set([...this.settings.sandbox.writable_roots, cwd])] },
        keep_full_output: this.settings.outputs !== undefined,
      },
      { signal },
    );
    if ("error" in r)
      return { output: `exec_command failed for \`${a.cmd}\`: ${r.error.message}`, success: false, display: a.cmd };
    return this.execOutcome(r.ok, {
      display: a.cmd,
      success: r.ok.exit_code === undefined || r.ok.exit_code === 0,
      callId,
      signal,
    });
  }

  /** An exec_command / write_stdin result for the model; a cut output's full text is saved first. */
  private async execOutcome(
    r: ExecResult,
    o: { display: string; success: boolean; callId?: string; signal?: AbortSignal },
  ): Promise<ToolCallOutcome> {
    const kept = await this.keepFullOutput(r, o.callId ?? `exec-${r.chunk_id}`, o.signal);
    const json = execResultJson(r);
    return {
      output: formatExecResult(r, kept?.note),
      success: o.success,
      display: o.display,
      codeModeResult: kept?.path ? { ...json, full_output_path: kept.path } : json,
      ...(kept?.path ? { fullOutputPath: kept.path } : {}),
    };
  }

  /** Fetches a cut result's full text from the executor and saves it next to the rollout. */
  private async keepFullOutput(
    r: ExecResult,
    callId: string,
    signal?: AbortSignal,
  ): Promise<{ note: string; path?: string } | undefined> {
    const spill = this.settings.outputs;
    if (!spill || !r.full_output) return undefined;
    const data = await fetchFullOutput(this.executor, r.full_output, signal);
    const saved = "error" in data ? data : await spill.save(callId, data.ok);
    if ("error" in saved) return { note: `The full output was not kept: ${saved.error.message}.` };
    return { note: fullOutputNote(saved.ok, r.full_output, spill.readableByTools), path: saved.ok.path };
  }

  private async writeStdin(raw: unknown, signal?: AbortSignal, callId?: string): Promise<ToolCallOutcome> {
    const parsed = fastParse(WriteStdinArgsSchema, raw);
    if (!parsed.success) return invalid("write_stdin", parsed.error);
    const a = parsed.data;
    const r = await this.executor.call(
      ExecutorMethods.write,
      {
        process_id: a.session_id,
        input: a.chars ?? "",
        yield_time_ms: a.yield_time_ms,
        max_output_tokens: Math.min(
          a.max_output_tokens ?? this.settings.maxOutputTokens,
          this.settings.maxOutputTokens,
        ),
      },
      { signal },
    );
    const display = `session ${a.session_id}${a.chars ? ` <- ${JSON.stringify(a.chars)}` : " (poll)"}`;
    if ("error" in r) return { output: `write_stdin failed: ${r.error.message}`, success: false, display };
    return this.execOutcome(r.ok, { display, success: true, callId, signal });
  }

  private async callTool(
    name: string,
    args: unknown,
    signal?: AbortSignal,
    workdir?: string,
  ): Promise<ToolCallOutcome> {
    const cwd = this.resolveDir(workdir);
    const display = `${name} ${summarizeArgs(args)}`;
    if (name === "apply_patch") {
      const input = (args as { input?: unknown })?.input;
      const approval = await this.approve(
        evaluatePatch(this.settings.approvalPolicy, typeof input === "string" ? input : "", cwd),
      );
      if ("error" in approval)
        return { output: `apply_patch was not applied: ${approval.error.message}`, success: false, display };
    }
    const r = await this.executor.call(
      ExecutorMethods.toolsCall,
      {
        name,
        arguments: args,
        cwd,
        sandbox: this.settings.pinWritableRoots
          ? this.settings.sandbox
          : {
              ...this.settings.sandbox,
              writable_roots: [...new Set([...this.settings.sandbox.writable_roots, this.settings.cwd])],
            },
      },
      { signal },
    );
    if ("error" in r) return { output: r.error.message, success: false, display };
    return { output: r.ok.text, success: true, display };
  }
}

function invalid(tool: string, e: z.ZodError): ToolCallOutcome {
  return {
    output: `The ${tool} tool was called with invalid arguments: ${z.prettifyError(e)}`,
    success: false,
    display: tool,
  };
}

function summarizeArgs(args: unknown): string {
  if (!args || typeof args !== "object") return "";
  const a = args as Record<string, unknown>;
  const v = a.file_path ?? a.dir_path ?? a.pattern ?? a.path;
  if (typeof v === "string") return v;
  if (typeof a.input === "string") {
    const files = [...a.input.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1]);
    return files.join(", ");
  }
  return "";
}
