/**
 * Applies the sandbox attempt the orchestrator selected. `auto` prefers the built-in sandbox
 * (Landlock + seccomp through a re-exec of relay itself; nothing to install), then
 * bubblewrap; macOS uses Seatbelt. A policy that no mechanism can enforce in full is refused
 * with what is missing and the choices: the executor fails closed, never open.
 */

import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { type SelfCommandErrorCode, selfCommand } from "../protocol/child.ts";
import { err, type Failure, ok, type Result } from "../util/result.ts";
import { type BwrapSupport, bwrapArgv, probeBwrap } from "./bwrap.ts";
import type { ContainerRef } from "./linux/container.ts";
import { SANDBOX_EXEC_ARG, SINGLE_THREAD_ENV } from "./linux/helper-arg.ts";
import { type ConfinePlan, findPaths, planConfinement } from "./linux/landlock-plan.ts";
import { type LandlockSupport, probeLandlock, probeUserns } from "./linux/support.ts";
import { SANDBOX_EXEC, seatbeltArgv } from "./seatbelt.ts";
import type { WarmLaunch } from "./warm-helper.ts";

export { type BwrapSupport, probeBwrap } from "./bwrap.ts";
export { type Containment, SandboxLaunchers } from "./launchers.ts";
export type { ConfinePlan } from "./linux/plan-schema.ts";
export { type LandlockSupport, probeLandlock, probeUserns } from "./linux/support.ts";
export type { WarmLaunch } from "./warm-helper.ts";

/** Why a command could not be confined as asked (it is then not run). */
export type SandboxErrorCode = "sandbox_unavailable" | SelfCommandErrorCode;

export type MechanismName = "landlock" | "bubblewrap" | "seatbelt" | "none";

export interface SandboxSupport {
  available: boolean;
  /** What `auto` uses here. */
  mechanism: MechanismName;
  detail: string;
  landlock?: LandlockSupport;
  bwrap?: BwrapSupport;
}

export interface SandboxAttempt {
  argv: string[];
  /** The same attempt for a warm helper (pipe mode): the plan and the bare command. */
  warm?: WarmLaunch;
  /** Variables the wrapper process needs on top of the command's environment. */
  env?: Record<string, string>;
  mechanism: MechanismName;
  /** What could not be enforced (best effort only). */
  gaps: string[];
}

export interface AttemptContext {
  cwd: string;
  tty: boolean;
  env: Record<string, string>;
  /** The executor's container for the built-in mechanism to run the command in (container.ts). */
  container?: ContainerRef;
}

const disabled = () => process.env.RELAY_SANDBOX_DISABLE === "1";

/** What this host can do; cheap after the first call (bubblewrap is probed only when needed). */
export async function probeSandbox(options: { bwrap?: boolean } = {}): Promise<SandboxSupport> {
  if (disabled()) return { available: false, mechanism: "none", detail: "disabled by RELAY_SANDBOX_DISABLE=1" };
  if (process.platform === "darwin")
    return {
      available: true,
      mechanism: "seatbelt",
      detail: `Seatbelt through ${SANDBOX_EXEC} (untested by relay's CI)`,
    };
  if (process.platform !== "linux")
    return { available: false, mechanism: "none", detail: `no sandbox implementation for ${process.platform}` };
  const landlock = await probeLandlock();
  const bwrap = options.bwrap || landlock.abi < 3 || !landlock.seccomp ? probeBwrap() : undefined;
  if (landlock.abi >= 3 && landlock.seccomp)
    return { available: true, mechanism: "landlock", detail: `built-in: ${landlock.detail}, seccomp`, landlock, bwrap };
  if (bwrap?.works)
    return {
      available: true,
      mechanism: "bubblewrap",
      detail: `${bwrap.detail} (the built-in sandbox cannot run here: ${landlock.detail})`,
      landlock,
      bwrap,
    };
  return {
    available: false,
    mechanism: "none",
    detail: `${landlock.detail}; ${bwrap?.detail ?? "bubblewrap not probed"}`,
    landlock,
    bwrap,
  };
}

const CHOICES =
  "Choices: run on a kernel with Landlock ABI 3+ (Linux 6.2+), install bubblewrap and use --sandbox-mechanism bwrap, " +
  "accept weaker enforcement with --sandbox-best-effort (sandbox.best_effort = true), or run without a sandbox with --sandbox danger-full-access.";

function refusal(policy: SandboxPolicy, why: string): Failure<"sandbox_unavailable"> {
  return err(
    "sandbox_unavailable",
    `the ${policy.mode} sandbox cannot be applied on this host: ${why}. The command was not run. ${CHOICES}`,
  );
}

/** The plan for the built-in mechanism, or what the kernel lacks for it. */
export async function planBuiltin(
  policy: SandboxPolicy,
  env: Record<string, string>,
): Promise<Result<ConfinePlan, "sandbox_unavailable">> {
  const landlock = await probeLandlock();
  if (!landlock.native) return err("sandbox_unavailable", landlock.detail);
  const found = findPaths(policy, env.TMPDIR);
  // Probing user namespaces forks, so only when a protected path or a socket to hide needs them.
  const userns = (found.readOnly.length > 0 || (found.sockets?.length ?? 0) > 0) && (await probeUserns()).ok;
  const planned = planConfinement({
    policy,
    abi: landlock.abi,
    tmpdir: env.TMPDIR,
    userns,
    seccomp: landlock.seccomp,
    found,
  });
  return "missing" in planned ? err("sandbox_unavailable", `missing ${planned.missing.join("; ")}`) : ok(planned.ok);
}

async function landlockAttempt(
  argv: string[],
  policy: SandboxPolicy,
  ctx: AttemptContext,
): Promise<Result<SandboxAttempt, SandboxErrorCode>> {
  const plan = await planBuiltin(policy, ctx.env);
  if ("error" in plan) return plan;
  const self = selfCommand();
  if ("error" in self) return self;
  // A single-threaded helper can unshare a user namespace in place, without forking.
  const restoreEnv = Object.fromEntries(Object.keys(SINGLE_THREAD_ENV).map((name) => [name, ctx.env[name] ?? null]));
  const contained: ConfinePlan = ctx.container ? { ...plan.ok, container: ctx.container } : plan.ok;
  const helperPlan: ConfinePlan = { ...contained, restoreEnv };
  return ok({
    argv: [...self.ok, SANDBOX_EXEC_ARG, JSON.stringify(helperPlan), "--", ...argv],
    env: { ...SINGLE_THREAD_ENV },
    warm: { plan: contained, command: argv },
    mechanism: "landlock",
    gaps: plan.ok.gaps,
  });
}

function bwrapAttempt(
  argv: string[],
  policy: SandboxPolicy,
  ctx: AttemptContext,
): Result<SandboxAttempt, SandboxErrorCode> {
  const bwrap = probeBwrap();
  if (!bwrap.works || !bwrap.program) return err("sandbox_unavailable", bwrap.detail);
  return ok({ argv: bwrapArgv(bwrap.program, argv, policy, ctx.cwd, ctx.tty), mechanism: "bubblewrap", gaps: [] });
}

/** The argv to spawn for `argv` under `policy`, or why it cannot be sandboxed. */
export async function prepareSandbox(
  argv: string[],
  policy: SandboxPolicy,
  ctx: AttemptContext,
): Promise<Result<SandboxAttempt, SandboxErrorCode>> {
  if (policy.mode === "danger-full-access") return ok({ argv, mechanism: "none", gaps: [] });
  if (disabled()) return refusal(policy, "disabled by RELAY_SANDBOX_DISABLE=1");
  if (process.platform === "darwin")
    return ok({ argv: seatbeltArgv(argv, policy, { tmpdir: ctx.env.TMPDIR }), mechanism: "seatbelt", gaps: [] });
  if (process.platform !== "linux") return refusal(policy, `relay has no sandbox for ${process.platform}`);
  const mechanism = policy.mechanism ?? "auto";
  if (mechanism === "bwrap") {
    const r = bwrapAttempt(argv, policy, ctx);
    return "error" in r ? refusal(policy, r.error.message) : r;
  }
  const builtin = await landlockAttempt(argv, policy, ctx);
  if ("ok" in builtin || mechanism === "landlock")
    return "error" in builtin ? refusal(policy, builtin.error.message) : builtin;
  const fallback = bwrapAttempt(argv, policy, ctx);
  if ("ok" in fallback) return fallback;
  return refusal(policy, `the built-in sandbox: ${builtin.error.message}; bubblewrap: ${fallback.error.message}`);
}
