/**
 * Asks the executor, once at session start, how it will confine commands under the session's
 * policy, so the header says it (and any best-effort gap) before the first command runs.
 */

import type { RelayConfig } from "../config/config.ts";
import { ErrorCode } from "../contracts/envelope.ts";
import { ExecutorMethods } from "../contracts/executor.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { Log } from "../util/log.ts";

const log = Log.create("session");

/**
 * The policy a session's commands run under in `cwd` (also what `relay doctor` checks): the cwd
 * is the writable root, unless the session names its roots itself.
 */
export function sessionSandboxPolicy(
  config: RelayConfig,
  cwd: string,
  o: { confineWrites?: boolean; writableRoots?: string[]; readOnlyPaths?: string[] } = {},
): SandboxPolicy {
  const confineWrites = o.confineWrites ?? false;
  return {
    mode: config.sandbox_mode,
    writable_roots: o.writableRoots ?? [cwd],
    ...(o.readOnlyPaths?.length ? { read_only_paths: o.readOnlyPaths } : {}),
    network: false,
    mechanism: config.sandbox.mechanism,
    best_effort: config.sandbox.best_effort,
    ...(confineWrites ? { tmp_writable: false } : {}),
  };
}

export interface SandboxState {
  mechanism: string;
  gaps: string[];
  /** Why no command can run under the policy; they are refused one by one with this reason. */
  refused?: string;
}

export async function checkSandbox(
  peer: RpcPeer,
  policy: SandboxPolicy,
  cwd: string,
  env: Record<string, string>,
): Promise<SandboxState> {
  const state = await askExecutor(peer, policy, cwd, env);
  const fields = { mode: policy.mode, mechanism: state.mechanism, gaps: state.gaps.length ? state.gaps : undefined };
  if (state.refused) log.warn("sandbox refused for the session", { ...fields, reason: state.refused });
  else log.info("sandbox", fields);
  return state;
}

async function askExecutor(
  peer: RpcPeer,
  policy: SandboxPolicy,
  cwd: string,
  env: Record<string, string>,
): Promise<SandboxState> {
  const r = await peer.call(ExecutorMethods.sandboxCheck, { sandbox: policy, cwd, env }, { timeoutMs: 30_000 });
  if ("ok" in r) return { mechanism: r.ok.mechanism, gaps: r.ok.gaps };
  // An older executor without the method: its commands will say for themselves.
  if (r.error.code === ErrorCode.MethodNotFound) return { mechanism: "unknown", gaps: [] };
  return { mechanism: "none", gaps: [], refused: r.error.message };
}
