/**
 * Makes "when the executor dies, its children die" hold even for SIGKILL, which runs no
 * handler. A small detached shell waits for EOF on a pipe only the executor holds; the kernel
 * closes it however the executor ends, and the shell then kills every process that carries
 * this executor's marker (Linux /proc; elsewhere the executor's own exit handlers remain).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { MARKER_VAR } from "./kill-tree.ts";

const SCRIPT = `
trap '' INT TERM HUP
cat >/dev/null
sweep() {
  for f in $(grep -lsz "^${MARKER_VAR}=$1:" /proc/[0-9]*/environ); do
    p=\${f#/proc/}; kill -9 "\${p%/environ}" 2>/dev/null
  done
}
sweep "$1"; sleep 0.2; sweep "$1"
`;

export function startDeathGuard(instanceId: string): ChildProcess | undefined {
  if (process.platform !== "linux" || !existsSync("/proc/self/environ")) return undefined;
  try {
    const guard = spawn("/bin/sh", ["-c", SCRIPT, "relay-death-guard", instanceId], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
    });
    guard.on("error", () => {});
    guard.unref();
    (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    return guard;
  } catch {
    return undefined;
  }
}
