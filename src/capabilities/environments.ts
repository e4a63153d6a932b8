/**
 * A session's environments: its own executor under its name, and the extra ones
 * (`--environment NAME=COMMAND-LINE`) started at session open, in parallel, each an executor
 * peer. One that does not start is a warning naming it and the fix; what it would have given
 * (its roots' skills) is simply absent. `get(id)` is how anything (skills, later MCP) reaches an
 * environment's executor; `close()` ends the extra ones (the session closes its own executor).
 */

import type { EnvironmentSpec } from "../config/environment-spec.ts";
import { type ExecutorInfo, ExecutorMethods } from "../contracts/executor.ts";
import { type ChildPeer, spawnCommandLine, spawnSelf } from "../protocol/child.ts";
import { joinCommandLine } from "../protocol/command-line.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, ok, type Result } from "../util/result.ts";

const START_TIMEOUT_MS = 60_000;

export interface EnvironmentPeer {
  id: string;
  peer: RpcPeer;
  info: ExecutorInfo;
  /** The command line that started it; absent for the session's own built-in executor. */
  command?: string;
}

export class SessionEnvironments {
  private readonly peers = new Map<string, EnvironmentPeer>();

  constructor(
    /** The executors this object started, and ends in close(). */
    readonly owned: ChildPeer[],
    started: EnvironmentPeer[],
    /** Environment id → why it is not available. */
    readonly unavailable: ReadonlyMap<string, string>,
  ) {
    for (const e of started) this.peers.set(e.id, e);
  }

  /** Registers the session's own executor (closed by the session, not here). */
  addMain(e: EnvironmentPeer): void {
    this.peers.set(e.id, e);
  }

  get(id: string): EnvironmentPeer | undefined {
    return this.peers.get(id);
  }

  /** Why `id` gives nothing: it did not start, or the session has no such environment. */
  whyUnavailable(id: string): string {
    if (this.unavailable.has(id)) return `its environment "${id}" did not start (see the warning naming it)`;
    return `this session has no environment named "${id}" (it has: ${[...this.peers.keys()].join(", ") || "none"}); add one with --environment ${id}="COMMAND-LINE"`;
  }

  async close(): Promise<void> {
    await Promise.all(this.owned.map((c) => c.shutdown()));
  }
}

/** Starts one environment's executor (no command: this relay's own) and asks it who it is. */
export async function startEnvironment(spec: {
  name: string;
  command?: string;
}): Promise<Result<{ child: ChildPeer; env: EnvironmentPeer }>> {
  const fix = spec.command
    ? `check that it starts relay's executor on stdio: relay executor --check --executor ${joinCommandLine([spec.command])}`
    : "relay doctor says why";
  const spawned = spec.command
    ? spawnCommandLine(spec.command, { name: `environment ${spec.name}` })
    : spawnSelf("executor", [], { name: "executor" });
  if ("error" in spawned)
    return err("environment_unavailable", `environment "${spec.name}" did not start: ${spawned.error.message}`);
  const info = await spawned.ok.peer.call(ExecutorMethods.info, {}, { timeoutMs: START_TIMEOUT_MS });
  if ("error" in info) {
    await spawned.ok.shutdown();
    return err(
      "environment_unavailable",
      `environment "${spec.name}"${spec.command ? ` (${spec.command})` : ""} did not start: ${info.error.message}; ${fix}`,
    );
  }
  return ok({
    child: spawned.ok,
    env: { id: spec.name, peer: spawned.ok.peer, info: info.ok, ...(spec.command ? { command: spec.command } : {}) },
  });
}

/**
 * Starts every extra environment at once. `reserved`: the session's own executor's name, which
 * no extra one may take. Each failure goes to `warn` and into `unavailable`.
 */
export async function startEnvironments(
  specs: EnvironmentSpec[],
  reserved: string,
  warn: (message: string) => void,
): Promise<SessionEnvironments> {
  const unavailable = new Map<string, string>();
  const results = await Promise.all(
    specs.map(async (spec) => {
      if (spec.name === reserved)
        return err(
          "environment_conflict",
          `environment "${spec.name}" not started: it is the name of the session's own executor; give the extra environment another name`,
        );
      return startEnvironment(spec);
    }),
  );
  const owned: ChildPeer[] = [];
  const started: EnvironmentPeer[] = [];
  results.forEach((r, i) => {
    const name = specs[i]!.name;
    if ("error" in r) {
      if (name !== reserved) unavailable.set(name, r.error.message);
      warn(`${r.error.message}; its capability roots give nothing`);
      return;
    }
    owned.push(r.ok.child);
    started.push(r.ok.env);
  });
  return new SessionEnvironments(owned, started, unavailable);
}
