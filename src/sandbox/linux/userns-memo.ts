/**
 * A probe of unprivileged user namespaces that succeeded, remembered for this user's later
 * processes (support.ts probeUserns). The probe compiles the sandbox's C part and forks: about
 * 10 ms of a sandboxed session's first request, which waits for `sandbox/check`.
 *
 * Only success is remembered, under a key of what decides it: the boot, the user, the process's
 * user and mount namespaces, the native part that probes, the sysctls that switch unprivileged
 * namespaces off, and whether a seccomp filter is on the process. A failure is probed again every time, so a passing refusal
 * (user.max_user_namespaces reached) never leaves later sessions with fewer protections; a
 * success gone stale fails closed, since each command's namespace step is checked when it runs.
 * The file lives in the user's private directory (private-dir.ts), so no one else can plant it.
 */
import { readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { writePrivateFile } from "./private-dir.ts";

const MEMO_FILE = "userns-ok";

/** The files whose contents decide whether the probe would succeed (absent ones count as absent). */
const KEY_FILES = [
  "/proc/sys/kernel/random/boot_id",
  "/proc/sys/kernel/unprivileged_userns_clone",
  "/proc/sys/user/max_user_namespaces",
  "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

export interface ProcReader {
  file(p: string): string | undefined;
  link(p: string): string | undefined;
}

const realProc: ProcReader = {
  file: (p) => attempt(() => readFileSync(p, "utf8").trim()),
  link: (p) => attempt(() => readlinkSync(p)),
};

/** What decides the probe's outcome here and now; undefined where the boot cannot be told. */
export function usernsKey(
  /** Which native part probes (confine-cc.ts nativeSourceHash): another one may probe otherwise. */
  native: string,
  proc: ProcReader = realProc,
  uid: number = process.getuid?.() ?? 0,
): string | undefined {
  const [boot, ...sysctls] = KEY_FILES.map((f) => proc.file(f));
  if (!boot) return undefined;
  const seccomp = /^Seccomp:\s*(\d+)/m.exec(proc.file("/proc/self/status") ?? "")?.[1] ?? "?";
  const spaces = ["user", "mnt"].map((ns) => proc.link(`/proc/self/ns/${ns}`) ?? "?");
  return JSON.stringify({ native, boot, uid, spaces, sysctls: sysctls.map((v) => v ?? null), seccomp });
}

/** Whether a success under `key` was remembered in `dir`. Anything else there (no file, another key, not ours) is no. */
export function rememberedSuccess(dir: string, key: string): boolean {
  const text = attempt(() => readFileSync(path.join(dir, MEMO_FILE), "utf8"));
  return text === key;
}

/** Remembers a success under `key` in `dir` (atomically; nothing is lost if it cannot be written). */
export function rememberSuccess(dir: string, key: string): void {
  attempt(() => writePrivateFile(dir, MEMO_FILE, key));
}

function attempt<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
