/**
 * What the running kernel offers the built-in sandbox, probed once per process: the Landlock
 * ABI, seccomp filters and unprivileged user namespaces. Tests (and `relay doctor` checks)
 * simulate a weaker machine with RELAY_SANDBOX_SIMULATE, e.g. `landlock-abi=0,no-userns`
 * (also `no-seccomp`, and `no-bwrap`, which bwrap.ts reads).
 */
import { loadNative, seccompSyscallNumber, describeNativeError } from "./native.ts";

export interface LandlockSupport {
  /** The native part loaded (Bun on Linux x64/arm64). */
  native: boolean;
  /** 0 when Landlock is missing or disabled. */
  abi: number;
  seccomp: boolean;
  /** Why something is missing, for messages. */
  detail: string;
}

interface Simulated {
  abi?: number;
  noUserns: boolean;
  noSeccomp: boolean;
}

export function simulated(): Simulated {
  const out: Simulated = { noUserns: false, noSeccomp: false };
  for (const part of (process.env.RELAY_SANDBOX_SIMULATE ?? "").split(",")) {
    const [key, value] = part.trim().split("=");
    if (key === "landlock-abi" && value !== undefined) out.abi = Number(value);
    if (key === "no-userns") out.noUserns = true;
    if (key === "no-seccomp") out.noSeccomp = true;
  }
  return out;
}

function abiDetail(raw: number): string {
  if (raw >= 1) return `Landlock ABI ${raw}`;
  if (raw === 0) return "this kernel has no Landlock";
  if (raw === -95) return "Landlock is built into this kernel but disabled (add landlock to the lsm= boot parameter)";
  if (raw === -38) return "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)";
  return `Landlock is unavailable (errno ${-raw})`;
}

let cached: LandlockSupport | undefined;

export async function probeLandlock(): Promise<LandlockSupport> {
  if (cached) return cached;
  const native = await loadNative();
  if ("error" in native) return (cached = { native: false, abi: 0, seccomp: false, detail: native.error.message });
  const sim = simulated();
  const raw = sim.abi ?? native.ok.symbols.relay_landlock_abi();
  const seccomp = !sim.noSeccomp && native.ok.symbols.relay_seccomp_available(seccompSyscallNumber() ?? -1) === 0;
  const parts = [sim.abi !== undefined ? `${abiDetail(raw)} (simulated by RELAY_SANDBOX_SIMULATE)` : abiDetail(raw)];
  if (!seccomp) parts.push("seccomp filters are unavailable (a kernel without CONFIG_SECCOMP_FILTER)");
  return (cached = { native: true, abi: Math.max(0, raw), seccomp, detail: parts.join("; ") });
}

let userns: { ok: boolean; detail: string } | undefined;

/** Whether a child can make the user + mount namespace that keeps `.git` read-only. */
export async function probeUserns(): Promise<{ ok: boolean; detail: string }> {
  if (userns) return userns;
  if (simulated().noUserns) return (userns = { ok: false, detail: "user namespaces are off (simulated by RELAY_SANDBOX_SIMULATE)" });
  const native = await loadNative();
  if ("error" in native) return (userns = { ok: false, detail: native.error.message });
  const r = native.ok.symbols.relay_probe_userns();
  if (r === 0) return (userns = { ok: true, detail: "unprivileged user namespaces work" });
  const why = describeNativeError(r).text;
  return (userns = {
    ok: false,
    detail: `unprivileged user namespaces are refused here (${why}); allow them with sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0`,
  });
}

export function resetLandlockProbe(): void {
  cached = undefined;
  userns = undefined;
}
