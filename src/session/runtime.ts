/**
 * Starts one session end to end: model client, executor (spawned or remote), skills, rollout
 * (new or resumed), tool router, and the agent loop for one user turn.
 * The parts are opened in open-parts.ts, the agent is built in agent-setup.ts, and the handle
 * that runs turns is handle.ts; what all of it takes is open-options.ts.
 */

import path from "node:path";
import { startEnvironments } from "../capabilities/environments.ts";
import type { McpServers } from "../mcp/servers.ts";
import { checkSandbox } from "../policy/sandbox-check.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import { err, ok, type Result } from "../util/result.ts";
import { buildAgent } from "./agent-setup.ts";
import { type SessionHandle, sessionHandle } from "./handle.ts";
import type { OpenSessionOptions, SessionRunOptions, SessionRunResult } from "./open-options.ts";
import {
  announce,
  commandSettings,
  describeExecutor,
  executorNameOf,
  listSkills,
  openRollout,
  sessionContext,
  sessionModel,
  startContainer,
  startExecutor,
  startMcp,
} from "./open-parts.ts";
import { findSource } from "./source.ts";
import { listExecutorTools } from "./tool-router.ts";

/** What a session asks of the memory store above it: opening a session's face exports it too (docs/architecture.md). */
export type { SessionMemories } from "./open-options.ts";

export async function runSession(o: SessionRunOptions): Promise<Result<SessionRunResult>> {
  const opened = await openSession({ ...o, firstPrompt: o.prompt, requirePrompt: true });
  if ("error" in opened) return opened;
  const s = opened.ok;
  try {
    if (o.prompt === undefined && s.agent.pendingWork() === "none") {
      return err(
        "nothing_to_resume",
        `session ${s.id} has no unfinished turn; pass a prompt to continue it: relay run --resume ${s.id} "next request"`,
      );
    }
    const outcome = await s.runTurn(o.prompt, o.signal);
    if ("error" in outcome) return outcome;
    return ok({ sessionId: s.id, rolloutPath: s.rolloutPath, outcome: outcome.ok });
  } finally {
    await s.close();
  }
}

export async function openSession(o: OpenSessionOptions): Promise<Result<SessionHandle>> {
  // Resume (or fork) first: it decides the cwd and the history.
  const resumedR = await findSource(o);
  if ("error" in resumedR) return resumedR;
  const resumed = resumedR.ok;
  if (!resumed && o.requirePrompt && o.firstPrompt === undefined)
    return err("usage", "a prompt is required (or --resume <id|last> to continue a session)");
  const cwd = path.resolve(o.cwd ?? resumed?.cwd ?? process.cwd());
  const model = sessionModel(o);
  if ("error" in model) return model;
  const exec = startExecutor(o.executorCommand ?? o.config.executor);
  if ("error" in exec) return exec;
  const executor = exec.ok;
  // The model's connection is made while the executor starts and the session is set up.
  model.ok.preconnect?.();
  // Read while the executor starts; awaited (and any failure thrown) where it is used.
  const memory = o.memories?.block(o.home);
  memory?.catch(() => undefined);
  // The extra environments start while the session's own executor does.
  const starting = startEnvironments(o.environments ?? [], executorNameOf(o), (message) =>
    o.emit({ type: "warning", message }),
  );
  let rolloutToClose: RolloutWriter | undefined;
  let mcpStarting: Promise<Result<McpServers | undefined>> | undefined;
  let handedOver = false;
  try {
    const started = await describeExecutor(o, executor);
    if ("error" in started) return started;
    // Asked at once: the executor builds its tool list while this side opens the rollout.
    const tools = listExecutorTools(executor.peer);
    const environments = await starting;
    environments.addMain({
      id: started.ok.name,
      peer: executor.peer,
      info: started.ok.info,
      ...(started.ok.remote ? { command: o.executorCommand ?? o.config.executor } : {}),
    });
    const writer = await openRollout(o, resumed, cwd, model.ok, started.ok);
    if ("error" in writer) return writer;
    const rollout = writer.ok;
    rolloutToClose = rollout;
    announce(o, rollout, model.ok.provider, started.ok, cwd, resumed);
    // MCP servers start now, while the rest of the session is set up.
    mcpStarting = startMcp(o, environments);
    const commands = commandSettings(o, started.ok, rollout, cwd);
    // The executor checks the sandbox while the skills and project docs are read.
    const sandbox = checkSandbox(executor.peer, commands.sandboxPolicy, cwd, commands.env);
    const skills = await listSkills(o, environments, started.ok, cwd);
    const context = await sessionContext(o, executor.peer, cwd, resumed);
    const built = await buildAgent(o, {
      cwd,
      model: model.ok,
      started: started.ok,
      rollout,
      skills,
      resumed,
      mcp: mcpStarting,
      tools,
      sandbox,
      commands,
      memory,
    });
    if ("error" in built) return built;
    startContainer(o, executor);
    handedOver = true;
    return ok(sessionHandle(o, { ...built.ok, rollout, executor, environments, skills, cwd, context }));
  } finally {
    if (!handedOver) {
      const mcp = await mcpStarting;
      if (mcp && "ok" in mcp) await mcp.ok?.close();
      await rolloutToClose?.close();
      await executor.shutdown();
      await (await starting).close();
    }
  }
}
