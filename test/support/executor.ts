/** Starts a real `relay executor` child for tests. */
import assert from "node:assert/strict";
import { type ExecCommandRequest, type ExecResult, ExecutorMethods } from "../../src/contracts/executor.ts";
import { type ChildPeer, spawnSelf } from "../../src/protocol/child.ts";
import { useSourceRelay } from "./self.ts";
import { waitFor } from "./wait.ts";

export async function startExecutor(env: Record<string, string> = {}): Promise<ChildPeer & AsyncDisposable> {
  useSourceRelay();
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
