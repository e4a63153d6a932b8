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

/**
 * Readies the guard for `instanceId` and returns the function to call before each process that
 * carries its marker starts. Under Bun the guard starts (synchronously) on the first such call, so
 * an executor that never starts a command, helper or MCP server never runs the guard's shell, nor
 * its sweep of every process's environment at exit. Elsewhere it starts now, as it is spawned
 * asynchronously. Where there is no /proc to sweep it never starts: the exit handlers remain.
 */
export function armDeathGuard(instanceId: string): () => void {
  if (process.platform !== "linux" || !existsSync("/proc/self/environ")) return () => {};
  const argv = ["/bin/sh", "-c", SCRIPT, "relay-death-guard", instanceId];
  const bun = bunSpawn();
  if (!bun) {
    void spawnWithNode(argv);
    return () => {};
  }
  let started = false;
  return () => {
    if (started) return;
    started = true;
    try {
      const guard = bun({ cmd: argv, stdin: "pipe", stdout: "ignore", stderr: "ignore", detached: true });
      guard.unref();
      guard.stdin?.unref?.();
      running.push(guard);
    } catch {
      // no shell to run it: the exit handlers remain
    }
  };
}

/** Node and Deno: node:child_process, imported only here (under Bun, Bun.spawn takes 0.4 ms of start-up where it took 5). */
async function spawnWithNode(argv: string[]): Promise<void> {
  try {
    const { spawn } = await import("node:child_process");
    const guard = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "ignore", "ignore"], detached: true });
    guard.on("error", () => {});
    guard.unref();
    (guard.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    running.push(guard);
  } catch {
    // no shell to run it: the exit handlers remain
  }
}
