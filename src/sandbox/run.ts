/**
 * `relay sandbox`: one command under exactly the attempt the executor would make for the same
 * policy. The built-in mechanism confines this very process and execs (no extra process);
 * bubblewrap and Seatbelt run their wrapper as a child whose exit status is passed on.
 */
import { spawn } from "node:child_process";
import os from "node:os";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { planBuiltin, prepareSandbox, type SandboxAttempt } from "./index.ts";
import { execConfined } from "./linux/helper.ts";
import { type ConfinePlan, Fs, Net, Scope } from "./linux/landlock-plan.ts";

export const EXIT_REFUSED = 126;

export interface SandboxRunRequest {
  policy: SandboxPolicy;
  argv: string[];
  cwd: string;
}

/** What would run: the mechanism and argv, or the refusal. Nothing is started. */
export async function describeAttempt(req: SandboxRunRequest) {
  const env = process.env as Record<string, string>;
  const attempt = await prepareSandbox(req.argv, req.policy, { cwd: req.cwd, tty: Boolean(process.stdin.isTTY), env });
  if ("error" in attempt || attempt.ok.mechanism !== "landlock") return attempt;
  const plan = await planBuiltin(req.policy, env);
  return "error" in plan ? plan : { ok: { ...attempt.ok, plan: plan.ok } };
}

function rightNames(mask: number, names: Record<string, number>): string[] {
  return Object.entries(names)
    .filter(([, bit]) => (mask & bit) !== 0)
    .map(([name]) => name.toLowerCase());
}

/** A readable account of an attempt, for `relay sandbox --explain`. */
export function explainAttempt(attempt: SandboxAttempt & { plan?: ConfinePlan }) {
  const plan = attempt.plan;
  if (!plan) return { mechanism: attempt.mechanism, gaps: attempt.gaps, argv: attempt.argv };
  return {
    mechanism: attempt.mechanism,
    landlock_abi: plan.abi,
    rules: plan.rules.map((r) => ({ path: r.path, allowed: rightNames(r.access, Fs) })),
    read_only_mounts: plan.readOnly,
    hidden_sockets: plan.hide,
    network: plan.filterSockets ? "off (socket() other than AF_UNIX fails with EPERM)" : "on",
    tcp_refused: rightNames(plan.handledNet, Net),
    scopes: rightNames(plan.scoped, Scope),
    gaps: plan.gaps,
  };
}

function runChild(attempt: SandboxAttempt, cwd: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(attempt.argv[0]!, attempt.argv.slice(1), { cwd, stdio: "inherit" });
    child.once("error", (e) => {
      process.stderr.write(`relay sandbox: could not start ${attempt.argv[0]}: ${e.message}\n`);
      resolve(EXIT_REFUSED);
    });
    child.once("exit", (code, signal) => resolve(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0)));
  });
}

/** Runs the command and resolves to its exit status, or to EXIT_REFUSED with the reason printed. */
export async function runSandboxed(req: SandboxRunRequest): Promise<number> {
  const attempt = await describeAttempt(req);
  if ("error" in attempt) {
    process.stderr.write(`relay sandbox: ${attempt.error.message}\n`);
    return EXIT_REFUSED;
  }
  for (const gap of attempt.ok.gaps) process.stderr.write(`relay sandbox: not enforced: ${gap}\n`);
  if ("plan" in attempt.ok) {
    process.chdir(req.cwd);
    return execConfined(attempt.ok.plan, req.argv);
  }
  return runChild(attempt.ok, req.cwd);
}
