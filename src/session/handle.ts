/**
 * An open session's handle: one executor and one history, for as many user turns as needed. A
 * failed turn is saved and says how to continue; a failed write of the record stops the session.
 */

import type { SessionEnvironments } from "../capabilities/environments.ts";
import type { SkillReader } from "../capabilities/skill-tool.ts";
import type { McpServers } from "../mcp/servers.ts";
import { ModelError } from "../model/client.ts";
import type { ResponseItem } from "../model/items.ts";
import type { ChildPeer } from "../protocol/child.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import { Log } from "../util/log.ts";
import { type ErrorValue, err, ok, type Result } from "../util/result.ts";
import { type AgentSession, RecordError, type TurnOptions, type TurnOutcome } from "./agent.ts";
import type { CodeModeTools } from "./code-mode.ts";
import type { OpenSessionOptions } from "./open-options.ts";

const log = Log.create("session");

/** An open session: one executor and one history, for as many user turns as needed. */
export interface SessionHandle {
  readonly id: string;
  readonly rolloutPath: string;
  readonly agent: AgentSession;
  readonly cwd: string;
  /** The session's environments by id: its own executor and the extra ones. */
  readonly environments: SessionEnvironments;
  /** Runs one user turn (no prompt: continue unfinished work after a resume). */
  runTurn(prompt: string | undefined, signal: AbortSignal, opts?: TurnOptions): Promise<Result<TurnOutcome>>;
  close(): Promise<void>;
}

export interface HandleParts {
  agent: AgentSession;
  codeMode?: CodeModeTools;
  mcp?: McpServers;
  rollout: RolloutWriter;
  executor: ChildPeer;
  environments: SessionEnvironments;
  skills: SkillReader;
  cwd: string;
  /** Recorded before the first turn's prompt. */
  context: ResponseItem[];
}

/**
 * The session record could not be written: the session stops (nothing after the failure runs),
 * with the file, the cause and the fix.
 */
export function recordFailed(e: RecordError, sessionId: string, o: OpenSessionOptions): { error: ErrorValue } {
  const resume = o.resumeCommand ?? `relay run --resume ${sessionId}`;
  const message = `the session stopped: ${e.message}; nothing after that was run. Free space (or fix the cause), then continue with: ${resume}`;
  log.warn("session record failed", { session_id: sessionId, error: e });
  o.emit({ type: "error", code: "record_failed", message });
  return err("record_failed", message, { sessionId, rolloutPath: e.path });
}

export function sessionHandle(o: OpenSessionOptions, p: HandleParts): SessionHandle {
  const { agent, rollout } = p;
  let closed = false;
  return {
    id: rollout.id,
    rolloutPath: rollout.path,
    agent,
    cwd: p.cwd,
    environments: p.environments,
    async runTurn(prompt, signal, opts) {
      const preamble = [...p.context.splice(0), ...(await p.skills.preamble(prompt ?? "", o.emit))];
      try {
        const outcome = await agent.runTurn(prompt, signal, preamble, opts);
        log.info("turn ended", { session_id: rollout.id, status: outcome.status, steps: outcome.steps });
        if (o.memories && outcome.finalMessage.includes("<oai-mem-citation>")) {
          const used = await o.memories.recordCitations(o.home, outcome.finalMessage);
          if ("error" in used)
            o.emit({ type: "warning", message: `memory citations were not counted: ${used.error.message}` });
        }
        return ok(outcome);
      } catch (e) {
        if (e instanceof RecordError) return recordFailed(e, rollout.id, o);
        await rollout.flush();
        const code = e instanceof ModelError ? `model_${e.code}` : "turn_failed";
        const message = `${(e as Error).message} (the session is saved; continue it with: ${o.resumeCommand ?? `relay run --resume ${rollout.id}`})`;
        log.warn("turn failed", { session_id: rollout.id, code, error: e as Error });
        o.emit({ type: "error", code, message });
        return err(code, message, { sessionId: rollout.id, rolloutPath: rollout.path });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      log.info("session ended", { session_id: rollout.id });
      // An open handle would be closed by GC, which Bun reports as an error. The rollout's last
      // write and the children's ends (MCP servers before the executor that may run them) are
      // waited for side by side.
      const ended = await Promise.allSettled([
        rollout.close(),
        (async () => {
          await p.codeMode?.close();
          await p.mcp?.close();
          await p.executor.shutdown();
          await p.environments.close();
        })(),
      ]);
      for (const end of ended) if (end.status === "rejected") throw end.reason;
    },
  };
}
