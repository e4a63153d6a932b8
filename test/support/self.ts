/**
 * Inside a test runner, argv[1] is the test file, not relay's entry point, so tests say how
 * to start relay through RELAY_SELF_COMMAND (children inherit it). Under Bun that is one
 * compiled relay shared by the run's workers (shared-relay.ts); RELAY_TEST_SOURCE=1 runs
 * `bun src/main.ts` instead (source lines in stack traces). Deno and Node run the sources.
 */

import { spawn } from "node:child_process";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { MAIN_TS, NODE_BUNDLE, REPO_ROOT } from "./paths.ts";
import { sharedRelay } from "./shared-relay.ts";

export function relayArgv(): string[] {
  const deno = (globalThis as { Deno?: { execPath(): string } }).Deno;
  if (deno) return [deno.execPath(), "run", "-A", "--no-check", MAIN_TS];
  if (process.versions.bun)
    return process.env.RELAY_TEST_SOURCE === "1" ? [process.execPath, MAIN_TS] : [sharedRelay()];
  return [process.execPath, NODE_BUNDLE];
}

export function useTestRelay(): void {
  process.env.RELAY_SELF_COMMAND = joinCommandLine(relayArgv());
}

/**
 * Runs relay with `args` and collects its output. Async on purpose: tests often serve a fake
 * model from their own process, which must keep answering while relay runs.
 */
export function runRelayAsync(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  stdin?: string,
  cwd = REPO_ROOT,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const [cmd, ...pre] = relayArgv();
  // With `stdin`, it is written to relay's standard input, then closed; without, stdin is /dev/null.
  const child = spawn(cmd!, [...pre, ...args], {
    cwd,
    env,
    stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  child.stdin?.end(stdin);
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout, stderr })));
}
