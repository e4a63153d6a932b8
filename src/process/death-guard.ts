/**
 * Makes "when the executor dies, its children die" hold even for SIGKILL, which runs no
 * handler. A small detached shell waits for EOF on a pipe only the executor holds; the kernel
 * closes it however the executor ends, and the shell then kills every process that carries
 * this executor's marker (Linux /proc; elsewhere the executor's own exit handlers remain).
 */
import { existsSync } from "node:fs";
import { bunSpawn } from "../util/bun-spawn.ts";
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

/**
 * The guard's pipe must stay open as long as the executor lives: this reference keeps its write
 * end from being collected (and closed, which would read as the executor's death).
 */
const running: object[] = [];

/** Starts the guard where there is a /proc to sweep; a guard that cannot start leaves the exit handlers alone. */
export async function startDeathGuard(instanceId: string): Promise<void> {
  if (process.platform !== "linux" || !existsSync("/proc/self/environ")) return;
  try {
    running.push(await spawnGuard(["/bin/sh", "-c", SCRIPT, "relay-death-guard", instanceId]));
  } catch {
    // no shell to run it: the exit handlers remain
  }
}

/**
 * Under Bun, Bun.spawn: node:child_process builds Node streams for the pipe, about 5 ms of
 * an executor's start-up in a compiled binary, against 0.4 ms.
 */
async function spawnGuard(argv: string[]): Promise<object> {
  const bun = bunSpawn();
  if (bun) {
    const guard = bun({ cmd: argv, stdin: "pipe", stdout: "ignore", stderr: "ignore", detached: true });
    guard.unref();
    guard.stdin?.unref?.();
    return guard;
  }
  const { spawn } = await import("node:child_process");
  const guard = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "ignore", "ignore"], detached: true });
  guard.on("error", () => {});
  guard.unref();
  (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return guard;
}
