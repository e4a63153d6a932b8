/**
 * The parts a session is opened from, before its agent: the model client, the executor and what
 * it says about itself, the rollout, the first items (AGENTS.md), the skills, the MCP servers,
 * and how commands run (environment, shell, sandbox policy).
 */

import type { SessionEnvironments } from "../capabilities/environments.ts";
import { loadProjectInstructions } from "../capabilities/project-docs.ts";
import { findSkills } from "../capabilities/skill-sources.ts";
import { SkillReader } from "../capabilities/skill-tool.ts";
import { defaultExecutorName } from "../config/environment-spec.ts";
import { reasoningOf } from "../config/resume-settings.ts";
import { type ExecutorInfo, ExecutorMethods } from "../contracts/executor.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import type { McpServers } from "../mcp/servers.ts";
import { openSessionMcp } from "../mcp/session-mcp.ts";
import type { ModelClient } from "../model/client.ts";
import { createModelClient } from "../model/factory.ts";
import type { ResponseItem } from "../model/items.ts";
import { sessionSandboxPolicy } from "../policy/sandbox-check.ts";
import { type ChildPeer, spawnCommandLine, spawnSelf } from "../protocol/child.ts";
import { closeEarly, takeEarly } from "../protocol/early-child.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { codexProviderId, wireApiOf } from "../rollout/codex-compat.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import { commandEnv } from "./env.ts";
import { BASE_INSTRUCTIONS } from "./instructions.ts";
import type { OpenSessionOptions } from "./open-options.ts";
import { pickShell } from "./shell.ts";
import { openSourceRollout, type Resumed } from "./source.ts";

const log = Log.create("session");

/** The session's executor: a remote one's command line, else this binary's (the one main.ts started early, if it did). */
export function startExecutor(command: string | undefined): Result<ChildPeer> {
  if (command) {
    void closeEarly();
    return spawnCommandLine(command, { name: "executor" });
  }
  const early = takeEarly("executor");
  return early ? ok(early) : spawnSelf("executor", [], { name: "executor" });
}

/** The executor a session runs its tools on, and what it said about itself. */
export interface StartedExecutor {
  executor: ChildPeer;
  info: ExecutorInfo;
  remote: boolean;
  name: string;
}

/** session_started, on the events and in the log. */
export function announce(
  o: OpenSessionOptions,
  rollout: RolloutWriter,
  provider: string,
  started: StartedExecutor,
  cwd: string,
  resumed: Resumed | undefined,
): void {
  const wasResumed = Boolean(resumed && !resumed.fork);
  o.emit({
    type: "session_started",
    session_id: rollout.id,
    rollout_path: rollout.path,
    model: o.config.model,
    provider,
    cwd,
    resumed: wasResumed,
    ...(resumed?.fork ? { forked_from: resumed.fork.id } : {}),
  });
  log.info("session started", {
    session_id: rollout.id,
    model: o.config.model,
    provider,
    resumed: wasResumed,
    forked: Boolean(resumed?.fork),
    executor: started.name,
    remote: started.remote,
    sandbox: o.config.sandbox_mode,
  });
}

export function sessionModel(o: OpenSessionOptions): Result<ModelClient> {
  const { config } = o;
  if (o.model) return ok(o.model);
  try {
    return ok(
      createModelClient({
        provider: o.scriptPath ? "scripted" : config.model_provider,
        model: config.model,
        baseUrl: config.base_url,
        apiKeyEnv: config.api_key_env,
        scriptPath: o.scriptPath,
        idleTimeoutMs: config.stream_idle_timeout_ms,
        ...(reasoningOf(config) ? { reasoning: reasoningOf(config) } : {}),
      }),
    );
  } catch (e) {
    return err("model_config", (e as Error).message);
  }
}

export async function describeExecutor(o: OpenSessionOptions, executor: ChildPeer): Promise<Result<StartedExecutor>> {
  // The container for sandboxed commands is started once the session is set up (startContainer),
  // so that its start does not compete with the setup's calls to the executor.
  const infoR = await executor.peer.call(ExecutorMethods.info, { containment: "later" }, { timeoutMs: 60_000 });
  if ("error" in infoR) return err("executor_unavailable", `the executor did not start: ${infoR.error.message}`);
  return ok({
    executor,
    info: infoR.ok,
    remote: Boolean(o.executorCommand ?? o.config.executor),
    name: executorNameOf(o),
  });
}

/**
 * Starts the executor's container for sandboxed commands in the background, while the first
 * model request is under way; the first command that needs it waits for it. A
 * danger-full-access session's commands run outside it: it starts only if one ever needs it.
 */
export function startContainer(o: OpenSessionOptions, executor: ChildPeer): void {
  if (o.config.sandbox_mode === "danger-full-access") return;
  void executor.peer.call(ExecutorMethods.info, { containment: "start" }, { timeoutMs: 60_000 }).catch(() => undefined);
}

/** The session's own executor's environment name: `--executor-name`, else local or remote. */
export function executorNameOf(o: OpenSessionOptions): string {
  return o.executorName ?? defaultExecutorName(o.executorCommand ?? o.config.executor);
}

export function openRollout(
  o: OpenSessionOptions,
  resumed: Resumed | undefined,
  cwd: string,
  model: ModelClient,
  started: StartedExecutor,
): Promise<Result<RolloutWriter>> {
  return openSourceRollout(
    o.home,
    resumed,
    {
      cwd,
      source: o.source ?? "cli",
      originator: "relay",
      cli_version: VERSION,
      model_provider: o.config.codex_provider_id ?? codexProviderId(o.config.base_url),
      wire_api: wireApiOf(model.provider),
      base_instructions: { text: BASE_INSTRUCTIONS },
      executor: { name: started.name, hostname: started.info.hostname },
      ...(o.infty ? { infty: { run_id: o.infty.runId, role: o.infty.role } } : {}),
    },
    o.rolloutDir,
  );
}

/** A new session's first items: its AGENTS.md instructions (a resumed one has them in history). */
export async function sessionContext(
  o: OpenSessionOptions,
  peer: RpcPeer,
  cwd: string,
  resumed: Resumed | undefined,
): Promise<ResponseItem[]> {
  if (resumed || o.projectDocs === false) return [];
  const docs = await loadProjectInstructions(peer, o.home, cwd, o.config);
  for (const message of docs.warnings) o.emit({ type: "warning", message });
  if (!docs.item) return [];
  o.emit({ type: "project_docs", files: docs.files });
  return [docs.item];
}

/**
 * The session's skills: its capability roots' (listed by their environments' executors) and the
 * local ones; a workspace on a remote executor has no local repository skills.
 */
export async function listSkills(
  o: OpenSessionOptions,
  environments: SessionEnvironments,
  started: StartedExecutor,
  cwd: string,
): Promise<SkillReader> {
  const found = await findSkills({
    roots: o.capabilityRoots ?? [],
    environments,
    home: o.home,
    local: o.localSkills !== false,
    ...(started.remote ? {} : { localCwd: cwd }),
  });
  for (const s of found.skipped) if (s.reason !== "collision") o.emit({ type: "warning", message: s.message });
  return new SkillReader(found.skills, environments);
}

/**
 * config.toml's servers, and the `.mcp.json` of each capability root, run by the executor of the
 * root's environment; a root whose environment is unavailable gives nothing (its skills warn why).
 */
export function startMcp(
  o: OpenSessionOptions,
  environments: SessionEnvironments,
): Promise<Result<McpServers | undefined>> {
  const roots = (o.capabilityRoots ?? []).flatMap((r) => {
    const env = environments.get(r.location.environmentId);
    return env ? [{ peer: env.peer, rootId: r.id, rootPath: r.location.path }] : [];
  });
  return openSessionMcp({
    mcpServers: o.config.mcp_servers,
    roots,
    maxOutputTokens: o.config.exec.max_output_tokens,
    emit: o.emit,
  });
}

/** How the session's commands run: their environment, shell and sandbox policy. */
export interface CommandSettings {
  env: Record<string, string>;
  shell: string;
  sandboxPolicy: SandboxPolicy;
}

export function commandSettings(
  o: OpenSessionOptions,
  started: StartedExecutor,
  rollout: RolloutWriter,
  cwd: string,
): CommandSettings {
  const { config } = o;
  const env = started.remote
    ? {
        PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        HOME: started.info.home,
        RELAY_SESSION_ID: rollout.id,
        ...o.env,
      }
    : commandEnv(rollout.id, process.env, o.env);
  const shell = started.remote
    ? (config.shell.path ?? "/bin/bash")
    : pickShell({ configured: config.shell.path, login: config.shell.login });
  return {
    env,
    shell,
    sandboxPolicy: sessionSandboxPolicy(config, cwd, {
      confineWrites: o.confineWrites,
      writableRoots: o.writableRoots,
      readOnlyPaths: o.readOnlyPaths,
    }),
  };
}
