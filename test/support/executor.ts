/** Starts a real `relay executor` child for tests. */
import assert from "node:assert/strict";
import { type ExecCommandRequest, type ExecResult, ExecutorMethods } from "../../src/contracts/executor.ts";
import { type ChildPeer, spawnSelf } from "../../src/protocol/child.ts";
import { useTestRelay } from "./self.ts";
import { waitFor } from "./wait.ts";

export async function startExecutor(env: Record<string, string> = {}): Promise<ChildPeer & AsyncDisposable> {
  useTestRelay();
  const c = spawnSelf("executor", [], { env: { ...process.env, RELAY_DETERMINISTIC_IDS: "1", ...env } });
  assert.ok("ok" in c, JSON.stringify(c));
  const child = c.ok as ChildPeer & AsyncDisposable;
  child[Symbol.asyncDispose] = async () => {
    await child.shutdown();
  };
  return child;
}

export async function exec(
  child: ChildPeer,
  req: Partial<ExecCommandRequest> & { command: string[] },
): Promise<ExecResult> {
  const r = await child.peer.call(ExecutorMethods.exec, {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    ...req,
  });
  assert.ok("ok" in r, `exec failed: ${JSON.stringify(r)}`);
  return r.ok;
}

export async function write(
  child: ChildPeer,
  process_id: number,
  input = "",
  extra: { yield_time_ms?: number; max_output_tokens?: number } = {},
): Promise<ExecResult> {
  const r = await child.peer.call(ExecutorMethods.write, { process_id, input, ...extra });
  assert.ok("ok" in r, `write failed: ${JSON.stringify(r)}`);
  return r.ok;
}

/**
 * What a running process prints until its output (from `first` on) matches `pattern`, read a
 * window at a time, or until it exits: a loaded machine may take longer than any one window.
 * (An empty write waits its whole window, at least 5 s: give `first` a window that usually does.)
 */
export async function outputUntil(
  child: ChildPeer,
  process_id: number,
  pattern: RegExp,
  first: ExecResult | undefined = undefined,
): Promise<{ output: string; last: ExecResult }> {
  let last = first ?? (await write(child, process_id, "", { yield_time_ms: 250 }));
  let output = last.output;
  while (!pattern.test(output) && last.exit_code === undefined) {
    last = await write(child, process_id, "", { yield_time_ms: 250 });
    output += last.output;
  }
  return { output, last };
}

/** Writes `input` and reads until the process has exited (see outputUntil); its last answer. */
export async function writeUntilExit(child: ChildPeer, process_id: number, input: string): Promise<ExecResult> {
  let last = await write(child, process_id, input, { yield_time_ms: 250 });
  while (last.exit_code === undefined) last = await write(child, process_id, "", { yield_time_ms: 250 });
  return last;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `waitFor` (./wait.ts) for `assert.ok(await waitUntil(...))` callers: no time bound of its own, so it only ever resolves true. */
export async function waitUntil(cond: () => boolean, what = "a condition to hold"): Promise<true> {
  await waitFor(cond, what);
  return true;
}
