/**
 * What the running kernel offers the built-in sandbox, probed once per process: the Landlock
 * ABI, seccomp filters and unprivileged user namespaces. Tests (and `relay doctor` checks)
 * simulate a weaker machine with RELAY_SANDBOX_SIMULATE, e.g. `landlock-abi=0,no-userns`
 * (also `no-seccomp`, `threaded` for the helper's forking path, and `no-bwrap`, which bwrap.ts reads).
 */
import { Log } from "../../util/log.ts";
import { loadNative, nativeSourceHash } from "./confine-cc.ts";
import { CArgs, loadLibc } from "./libc.ts";
import { privateDir } from "./private-dir.ts";
import { decodeNativeError, describeFailure } from "./stages.ts";
import { rememberedSuccess, rememberSuccess, usernsKey } from "./userns-memo.ts";

const SYS_LANDLOCK_CREATE_RULESET = 444;
const LANDLOCK_CREATE_RULESET_VERSION = 1;
const SECCOMP_NR: Record<string, number> = { x64: 317, arm64: 277 };
const SECCOMP_GET_ACTION_AVAIL = 2;
const SECCOMP_RET_ERRNO = 0x00050000;

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
  /** The helper acts as if it had threads, which makes it take the forking path. */
  threaded: boolean;
  /** The executor does not let its container's init spawn commands: helpers do, as where it cannot. */
  noInitSpawn: boolean;
}

export function simulated(env: Record<string, string | undefined> = process.env): Simulated {
  const out: Simulated = { noUserns: false, noSeccomp: false, threaded: false, noInitSpawn: false };
  for (const part of (env.RELAY_SANDBOX_SIMULATE ?? "").split(",")) {
    const [key, value] = part.trim().split("=");
    if (key === "landlock-abi" && value !== undefined) out.abi = Number(value);
    if (key === "no-userns") out.noUserns = true;
    if (key === "no-seccomp") out.noSeccomp = true;
    if (key === "threaded") out.threaded = true;
    if (key === "no-init-spawn") out.noInitSpawn = true;
  }
  return out;
}

function abiDetail(raw: number): string {
  if (raw >= 1) return `Landlock ABI ${raw}`;
  if (raw === 0) return "this kernel has no Landlock";
  if (raw === -95) return "Landlock is built into this kernel but disabled (add landlock to the lsm= boot parameter)";
  if (raw === -38)
    return "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)";
  return `Landlock is unavailable (errno ${-raw})`;
}

let cached: LandlockSupport | undefined;

export async function probeLandlock(): Promise<LandlockSupport> {
  if (cached) return cached;
  if (process.platform !== "linux" || !(process.arch in SECCOMP_NR)) {
    return (cached = {
      native: false,
      abi: 0,
      seccomp: false,
      detail: `the built-in sandbox supports Linux on x64 and arm64, not ${process.platform}-${process.arch}`,
    });
  }
  const loaded = await loadLibc();
  if ("error" in loaded) return (cached = { native: false, abi: 0, seccomp: false, detail: loaded.error.message });
  const { libc, ffi } = loaded.ok;
  const sim = simulated();
  const version = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, 0, 0, LANDLOCK_CREATE_RULESET_VERSION, 0, 0, 0);
  const raw = sim.abi ?? (version < 0 ? -libc.errno() : version);
  const action = new Uint32Array([SECCOMP_RET_ERRNO]);
  const seccompOk =
    libc.syscall(SECCOMP_NR[process.arch]!, SECCOMP_GET_ACTION_AVAIL, 0, new CArgs(ffi).bytes(action), 0, 0, 0) === 0;
  const seccomp = !sim.noSeccomp && seccompOk;
  const parts = [sim.abi !== undefined ? `${abiDetail(raw)} (simulated by RELAY_SANDBOX_SIMULATE)` : abiDetail(raw)];
  if (!seccomp) parts.push("seccomp filters are unavailable (a kernel without CONFIG_SECCOMP_FILTER)");
  return (cached = { native: true, abi: Math.max(0, raw), seccomp, detail: parts.join("; ") });
}

let userns: { ok: boolean; detail: string } | undefined;
const WORKS = "unprivileged user namespaces work";
const log = Log.create("sandbox");

/** Where a successful probe is remembered, and under which key (userns-memo.ts); undefined where it cannot be. */
async function memoPlace(): Promise<{ dir: string; key: string } | undefined> {
  const dir = privateDir();
  const key = dir ? usernsKey(await nativeSourceHash()) : undefined;
  return dir && key ? { dir, key } : undefined;
}

/** Whether a child can make the user + mount namespace that keeps `.git` read-only. */
export async function probeUserns(): Promise<{ ok: boolean; detail: string }> {
  if (userns) return userns;
  if (simulated().noUserns)
    return (userns = { ok: false, detail: "user namespaces are off (simulated by RELAY_SANDBOX_SIMULATE)" });
  const memo = await memoPlace();
  if (memo && rememberedSuccess(memo.dir, memo.key)) {
    log.debug("user namespaces work (an earlier probe since this boot)");
    return (userns = { ok: true, detail: WORKS });
  }
  const native = await loadNative();
  if ("error" in native) return (userns = { ok: false, detail: native.error.message });
  const r = native.ok.symbols.relay_probe_userns();
  if (r === 0) {
    if (memo) rememberSuccess(memo.dir, memo.key);
    return (userns = { ok: true, detail: WORKS });
  }
  const why = describeFailure(decodeNativeError(r));
  return (userns = {
    ok: false,
    detail: `unprivileged user namespaces are refused here (${why}); allow them with sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0`,
  });
}
