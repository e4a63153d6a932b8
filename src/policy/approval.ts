/**
 * Approval policy, evaluated by the orchestrator before anything reaches the executor.
 *   never       never ask; commands run in the sandbox; escalation is refused
 *   on-request  run in the sandbox without asking; ask when the model requests escalation
 *   untrusted   ask before every command that is not known to be read-only (command-safety.ts),
 *               and every patch
 * Asking needs a terminal; without one the request is refused with a clear message.
 */

import type { UserApprovalRule } from "../config/approval-rules.ts";
import type { ApprovalPolicy } from "../config/config.ts";
import { loadBashGrammar } from "../util/bash-grammar.ts";
import { Log } from "../util/log.ts";
import { commandSafety } from "./command-safety.ts";
import type { Safety } from "./safety/verdict.ts";

export type ApprovalDecision = "approved" | "approved_for_session" | "denied";

export interface ApprovalRequest {
  kind: "exec" | "patch" | "escalation" | "mcp";
  /** What will run or change, for the prompt. */
  summary: string;
  justification?: string;
  /** Why relay asks (from the policy), e.g. "sort -o writes a file". */
  reason?: string;
  /** More to show under the summary, e.g. an MCP tool's arguments. */
  detail?: string;
  cwd: string;
}

export interface Approver {
  readonly interactive: boolean;
  ask(req: ApprovalRequest): Promise<ApprovalDecision>;
}

/** Whether `untrusted` may run `cmd` without asking: every command in it is known to only read. */
export async function isKnownSafe(cmd: string): Promise<boolean> {
  return (await untrustedSafety(cmd, [])).safe;
}

/**
 * The verdict of command-safety.ts, once the bash grammar it reads commands with is loaded. A
 * grammar that cannot load (a damaged binary) fails closed: the command asks, saying why.
 */
async function untrustedSafety(cmd: string, rules: readonly UserApprovalRule[]): Promise<Safety> {
  try {
    await loadBashGrammar();
  } catch (e) {
    log.warn((e as Error).message);
    return { safe: false, reason: `${(e as Error).message}; every command asks` };
  }
  return commandSafety(cmd, rules);
}

export type ApprovalNeed =
  | { type: "skip" }
  | { type: "ask"; request: ApprovalRequest }
  | { type: "refuse"; reason: string };

export async function evaluateExec(
  policy: ApprovalPolicy,
  cmd: string,
  cwd: string,
  escalation: boolean,
  justification?: string,
  rules: readonly UserApprovalRule[] = [],
): Promise<ApprovalNeed> {
  if (escalation) {
    if (policy === "never") {
      return {
        type: "refuse",
        reason: `approval policy is never; reject command — you cannot ask for escalated permissions if the approval policy is never`,
      };
    }
    return { type: "ask", request: { kind: "escalation", summary: cmd, justification, cwd } };
  }
  if (policy !== "untrusted") return { type: "skip" };
  const safety = await untrustedSafety(cmd, rules);
  if (safety.safe) return { type: "skip" };
  return { type: "ask", request: { kind: "exec", summary: cmd, justification, reason: safety.reason, cwd } };
}

export function evaluatePatch(policy: ApprovalPolicy, summary: string, cwd: string): ApprovalNeed {
  if (policy === "untrusted") return { type: "ask", request: { kind: "patch", summary, cwd } };
  return { type: "skip" };
}

/**
 * An MCP tool call: under untrusted, a tool that declares `annotations.readOnlyHint: true` runs
 * without asking and any other asks, as a patch does; the other policies do not ask.
 */
export function evaluateMcpTool(
  policy: ApprovalPolicy,
  tool: string,
  readOnly: boolean,
  args: string,
  cwd: string,
): ApprovalNeed {
  if (policy !== "untrusted" || readOnly) return { type: "skip" };
  return {
    type: "ask",
    request: {
      kind: "mcp",
      summary: tool,
      detail: args,
      reason: "the MCP tool does not declare itself read-only (annotations.readOnlyHint)",
      cwd,
    },
  };
}

/** Refuses every request: for runs without a terminal. */
export const nonInteractiveApprover: Approver = {
  interactive: false,
  async ask() {
    return "denied";
  },
};

/** Asks on the terminal: y = once, a = for the rest of the session, n = no. */
export function terminalApprover(
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Approver {
  return {
    interactive: true,
    async ask(req) {
      // Loaded on the first question: node:readline costs every session milliseconds at start-up.
      const { createInterface } = await import("node:readline/promises");
      const rl = createInterface({ input, output });
      try {
        const what =
          req.kind === "patch"
            ? "apply this patch"
            : req.kind === "escalation"
              ? "run this command OUTSIDE the sandbox"
              : req.kind === "mcp"
                ? "call this MCP tool"
                : "run this command";
        output.write(`\nrelay wants to ${what} in ${req.cwd}:\n  ${req.summary.split("\n").join("\n  ")}\n`);
        if (req.detail) output.write(`  ${req.detail.slice(0, 2000).split("\n").join("\n  ")}\n`);
        if (req.justification) output.write(`reason: ${req.justification}\n`);
        if (req.reason) output.write(`asking because ${req.reason}\n`);
        for (;;) {
          const a = (await rl.question("approve? [y]es / [a]lways this session / [n]o: ")).trim().toLowerCase();
          if (a === "y" || a === "yes") return "approved";
          if (a === "a" || a === "always") return "approved_for_session";
          if (a === "n" || a === "no" || a === "") return "denied";
        }
      } finally {
        rl.close();
      }
    },
  };
}

const log = Log.create("session");

/** Remembers "always" answers for the rest of the session, per kind and summary. */
export class ApprovalCache {
  private readonly always = new Set<string>();
  constructor(private readonly approver: Approver) {}

  get interactive(): boolean {
    return this.approver.interactive;
  }

  async decide(req: ApprovalRequest): Promise<ApprovalDecision> {
    const key = `${req.kind}\0${req.summary}`;
    if (this.always.has(key) || this.always.has(`${req.kind}\0*`)) return "approved";
    const d = await this.approver.ask(req);
    // The kind and the answer only: the summary is the model's command or patch.
    log.info("approval", { kind: req.kind, decision: d, interactive: this.approver.interactive });
    if (d === "approved_for_session") this.always.add(key);
    return d;
  }
}
