/**
 * The sandbox lines of `relay doctor`: the mechanism `relay run` would use and whether it can
 * confine commands in the workspace, then each thing it is built from (Landlock, seccomp, user
 * namespaces, bubblewrap).
 */
import type { RelayConfig } from "../config/config.ts";
import { sessionSandboxPolicy } from "../policy/sandbox-check.ts";
import {
  type BwrapSupport,
  type LandlockSupport,
  prepareSandbox,
  probeBwrap,
  probeUserns,
  type SandboxSupport,
} from "../sandbox/index.ts";
import { check, type DoctorCheck, notLinux, stringEnv } from "./check.ts";

const SANDBOX_CHOICES =
  "run on a kernel with Landlock ABI 3+ (Linux 6.2+); or install bubblewrap (apt-get install bubblewrap); " +
  "or accept weaker enforcement with --sandbox-best-effort (config: [sandbox] best_effort = true); " +
  'or run without a sandbox with --sandbox danger-full-access (config: sandbox_mode = "danger-full-access")';

export function sandboxCheck(support: SandboxSupport, config: RelayConfig): DoctorCheck {
  const name = "sandbox";
  const mode = config.sandbox_mode;
  const needed = mode !== "danger-full-access";
  const forced = config.sandbox.mechanism;
  const linux = process.platform === "linux";
  const note = needed ? "" : ` (not needed: sandbox_mode = ${mode})`;
  // A mechanism forced in config.toml is the one `relay run` will use, whatever auto would pick.
  if (linux && forced === "landlock" && support.landlock) {
    const l = support.landlock;
    if (l.abi >= 3 && l.seccomp)
      return check(name, "ok", `landlock (sandbox.mechanism = landlock): ${l.detail}, seccomp${note}`, needed);
    return bestEffortOr(
      name,
      support,
      config,
      `sandbox.mechanism = landlock, but ${l.detail}${l.seccomp ? "" : ", no seccomp"}${note}`,
      needed,
    );
  }
  if (linux && forced === "bwrap") {
    const b = support.bwrap ?? probeBwrap();
    if (b.works) return check(name, "ok", `bubblewrap (sandbox.mechanism = bwrap): ${b.detail}${note}`, needed);
    return check(
      name,
      "missing",
      `sandbox.mechanism = bwrap, but ${b.detail}${note}`,
      needed,
      'install bubblewrap (apt-get install bubblewrap); or set [sandbox] mechanism = "auto" to use the built-in sandbox; or run without a sandbox with --sandbox danger-full-access',
    );
  }
  if (support.available) {
    const shown = support.detail.startsWith("built-in: ")
      ? `${support.mechanism} (built-in): ${support.detail.slice("built-in: ".length)}`
      : `${support.mechanism}: ${support.detail}`;
    return check(name, "ok", shown + note, needed);
  }
  return bestEffortOr(name, support, config, `no mechanism can enforce ${mode} here: ${support.detail}${note}`, needed);
}

/**
 * The executor's own decision for a command in `cwd`, which the probes alone cannot make (a git
 * workspace needs user namespaces to keep .git read-only, say): a refusal there turns an ok into
 * missing with the executor's reason, and best-effort gaps are named.
 */
export async function workspaceVerdict(
  probed: DoctorCheck,
  config: RelayConfig,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<DoctorCheck> {
  if (config.sandbox_mode === "danger-full-access" || probed.status === "missing") return probed;
  const attempt = await prepareSandbox(["true"], sessionSandboxPolicy(config, cwd), {
    cwd,
    tty: false,
    env: stringEnv(env),
  });
  if ("error" in attempt)
    return check(
      probed.name,
      "missing",
      `commands in ${cwd} would be refused: ${attempt.error.message}`,
      probed.required,
      SANDBOX_CHOICES,
    );
  if (attempt.ok.gaps.length > 0)
    return check(
      probed.name,
      "warn",
      `${probed.detail}; in ${cwd}, not enforced: ${attempt.ok.gaps.join("; ")}`,
      false,
    );
  return probed;
}

/** With `[sandbox] best_effort = true` the built-in sandbox runs with what the kernel has. */
function bestEffortOr(
  name: string,
  support: SandboxSupport,
  config: RelayConfig,
  detail: string,
  needed: boolean,
): DoctorCheck {
  if (needed && config.sandbox.best_effort && support.landlock?.native && config.sandbox.mechanism !== "bwrap") {
    return check(
      name,
      "warn",
      `best effort (sandbox.best_effort = true): commands run with weaker enforcement; ${detail}`,
      false,
      "for full enforcement: a kernel with Landlock ABI 3+ (Linux 6.2+), or bubblewrap (apt-get install bubblewrap)",
    );
  }
  return check(name, "missing", detail, needed, SANDBOX_CHOICES);
}

export function landlockCheck(l: LandlockSupport | undefined): DoctorCheck {
  const name = "landlock";
  if (process.platform !== "linux" || !l) return check(name, "warn", notLinux(), false);
  if (!l.native)
    return check(
      name,
      "missing",
      `the built-in sandbox cannot load: ${l.detail}`,
      false,
      "run the relay binary (or relay under bun), or use bubblewrap",
    );
  // The probe's detail also mentions seccomp, which has its own line.
  const abi = l.detail.split("; ")[0]!;
  if (l.abi >= 3) return check(name, "ok", abi, false);
  const fix =
    "upgrade to a kernel with Landlock ABI 3+ (Linux 6.2+, landlock in the lsm= boot parameter); meanwhile bubblewrap or --sandbox-best-effort";
  if (l.abi >= 1)
    return check(
      name,
      "warn",
      `${abi}: the built-in sandbox needs ABI 3 (Linux 6.2+) to control truncation; best effort only`,
      false,
      fix,
    );
  return check(name, "missing", `${abi}: the built-in sandbox needs Landlock ABI 3+ (Linux 6.2+)`, false, fix);
}

export function seccompCheck(l: LandlockSupport | undefined): DoctorCheck {
  const name = "seccomp";
  if (process.platform !== "linux" || !l) return check(name, "warn", notLinux(), false);
  if (!l.native) return check(name, "missing", `not probed: ${l.detail}`, false);
  if (l.seccomp) return check(name, "ok", "seccomp filters work (they turn the network off inside the sandbox)", false);
  const simulated = (process.env.RELAY_SANDBOX_SIMULATE ?? "").includes("no-seccomp")
    ? " (simulated by RELAY_SANDBOX_SIMULATE)"
    : "";
  return check(
    name,
    "missing",
    `seccomp filters are unavailable${simulated}: the built-in sandbox cannot turn the network off`,
    false,
    "a kernel with CONFIG_SECCOMP_FILTER, or bubblewrap",
  );
}

export async function usernsCheck(): Promise<DoctorCheck> {
  const name = "user namespaces";
  if (process.platform !== "linux") return check(name, "warn", notLinux(), false);
  const u = await probeUserns();
  const why = "needed to keep .git and .relay read-only inside a writable workspace";
  if (u.ok) return check(name, "ok", `${u.detail} (${why})`, false);
  return check(
    name,
    "missing",
    `${u.detail}; ${why}: without them git workspaces need bubblewrap or --sandbox-best-effort`,
    false,
    "allow unprivileged user namespaces (see detail), or install bubblewrap",
  );
}

export function bwrapCheck(b: BwrapSupport | undefined): DoctorCheck {
  const name = "bubblewrap";
  if (process.platform !== "linux") return check(name, "warn", notLinux(), false);
  const r = b ?? probeBwrap();
  if (r.works) return check(name, "ok", r.detail, false);
  if (!r.program && /not installed/.test(r.detail))
    return check(name, "warn", "optional, not installed (apt-get install bubblewrap)", false);
  return check(name, "warn", `optional: ${r.detail}`, false);
}
