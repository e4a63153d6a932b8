/**
 * Starts one session end to end: model client, executor (spawned or remote), skills, rollout
 * (new or resumed), tool router, and the agent loop for one user turn.
 */

import os from "node:os";
import path from "node:path";
import { type SessionEnvironments, startEnvironments } from "../capabilities/environments.ts";
import { loadProjectInstructions } from "../capabilities/project-docs.ts";
import { skillsCatalog } from "../capabilities/skill-catalog.ts";
import { findSkills } from "../capabilities/skill-sources.ts";
import { SKILL_TOOL_SPEC, SkillReader } from "../capabilities/skill-tool.ts";
import type { CapabilityRoot } from "../config/capability-root.ts";
import type { RelayConfig } from "../config/config.ts";
import { defaultExecutorName, type EnvironmentSpec } from "../config/environment-spec.ts";
import { modelSettings, reasoningOf, sessionSettings } from "../config/resume-settings.ts";
import type { EmitEvent } from "../contracts/events.ts";
import { type ExecutorInfo, ExecutorMethods, type ToolSpec } from "../contracts/executor.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import type { McpServers } from "../mcp/servers.ts";
import { openSessionMcp } from "../mcp/session-mcp.ts";
import { type ModelClient, ModelError } from "../model/client.ts";
import { createModelClient } from "../model/factory.ts";
import type { ResponseItem } from "../model/items.ts";
import { ApprovalCache, type Approver } from "../policy/approval.ts";
import { checkSandbox, type SandboxState, sessionSandboxPolicy } from "../policy/sandbox-check.ts";
import { type ChildPeer, spawnCommandLine, spawnSelf } from "../protocol/child.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { codexProviderId, codexSandboxPolicy, wireApiOf } from "../rollout/codex-compat.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import { Log } from "../util/log.ts";
import { type ErrorValue, err, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import { AgentSession, RecordError, type TurnOptions, type TurnOutcome } from "./agent.ts";
import { CodeModeTools } from "./code-mode.ts";
import { commandEnv } from "./env.ts";
import { BASE_INSTRUCTIONS, developerInstructions } from "./instructions.ts";
import { OutputSpill, outputsDir } from "./output-spill.ts";
import { pickShell } from "./shell.ts";
import { findSource, openSourceRollout, type Resumed } from "./source.ts";
import { listExecutorTools, ToolRouter } from "./tool-router.ts";
import { type HeartbeatSettings, withHeartbeat } from "./waiting.ts";

export const DEFAULT_CONTEXT_WINDOW = 128_000;
const log = Log.create("session");

export { type CapabilityRoot, parseCapabilityRoot } from "../config/capability-root.ts";

export interface SessionRunOptions {
  home: string;
  config: RelayConfig;
  prompt?: string;
  /** A session id, unique id prefix, `last`, or a rollout path. */
  resume?: string;
  /** The same, of a session to fork: a new session starts with a copy of its history. */
  fork?: string;
  cwd?: string;
  scriptPath?: string;
  /** Command line of a remote executor; default: re-exec relay's own `executor`. */
  executorCommand?: string;
  /** Environment name of this session's executor (`local` for the built-in one). */
  executorName?: string;
  capabilityRoots?: CapabilityRoot[];
  /** Extra environments (executor peers) for capabilities, started at open. */
  environments?: EnvironmentSpec[];
  maxSteps?: number;
  approver: Approver;
  emit: EmitEvent;
  signal: AbortSignal;
  source?: string;
  /** Extra developer instructions (e.g. a role prompt, memories). */
  extraInstructions?: string[];
  /** Offer the `exec` (JavaScript) and `wait` tools, run on a code-mode host (`--code-mode`). */
  codeMode?: boolean;
  /**
   * The memory store to inject from and count citations in; none by default. The CLI wires
   * src/memories/read.ts here (the session layer does not reach up into memories).
   */
  memories?: SessionMemories;
  /** Only the cwd is writable: not /tmp, not another workdir (the memory consolidation agent). */
  confineWrites?: boolean;
  /**
   * Exactly these roots are writable under workspace-write (the temp dirs too), whatever the cwd
   * or a call's workdir: an infty role's checkout and the model's part of the run store.
   */
  writableRoots?: string[];
  /** Paths that stay read-only even inside a writable root or temp dir (an infty run's own files). */
  readOnlyPaths?: string[];
  /** Variables added to every command's environment (e.g. RELAY_RUN_STORE for infty roles). */
  env?: Record<string, string>;
  /** The infty run and role this session is (recorded in its session_meta; `source` is then "infty"). */
  infty?: { runId: string; role: string };
  /** How a person continues this session after a failed turn (default: relay run --resume <id>). */
  resumeCommand?: string;
  /** Give a new session the AGENTS.md files (default true; off for the memory consolidation agent). */
  projectDocs?: boolean;
  /** Offer the local skills ($RELAY_HOME/skills, the repository's .relay/skills; default true). */
  localSkills?: boolean;
  /** When `waiting` heartbeats come while the model is silent (default: after 3 s, then every 5 s). */
  heartbeat?: HeartbeatSettings;
}

export interface SessionRunResult {
  sessionId: string;
  rolloutPath: string;
  outcome: TurnOutcome;
}

function startExecutor(command: string | undefined): Result<ChildPeer> {
  return command ? spawnCommandLine(command, { name: "executor" }) : spawnSelf("executor", [], { name: "executor" });
}

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

export interface OpenSessionOptions extends Omit<SessionRunOptions, "prompt" | "signal"> {
  /** A model client to use instead of building one from config (e.g. a scripted role). */
  model?: ModelClient;
  /** The prompt the first turn will get; only used to find `$skill` mentions and to validate. */
  firstPrompt?: string;
  /** Require a prompt for a new session (true for `relay run`). */
  requirePrompt?: boolean;
}

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

/** What a session asks of the memory store above it. */
export interface SessionMemories {
  /** The block added to the developer instructions (the memory summary), if any, and why there is none when something failed. */
  block(home: string): Promise<{ text?: string; warning?: string }>;
  /** Counts the memory citations in a turn's final message; how many were recorded. */
  recordCitations(home: string, finalMessage: string): Promise<Result<number>>;
}

/** The executor a session runs its tools on, and what it said about itself. */
interface StartedExecutor {
  executor: ChildPeer;
  info: ExecutorInfo;
  remote: boolean;
  name: string;
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

/** session_started, on the events and in the log. */
function announce(
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

function sessionModel(o: OpenSessionOptions): Result<ModelClient> {
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

async function describeExecutor(o: OpenSessionOptions, executor: ChildPeer): Promise<Result<StartedExecutor>> {
  // The container for sandboxed commands starts meanwhile; the first command waits for it.
  const infoR = await executor.peer.call(ExecutorMethods.info, { containment: "start" }, { timeoutMs: 60_000 });
  if ("error" in infoR) return err("executor_unavailable", `the executor did not start: ${infoR.error.message}`);
  return ok({
    executor,
    info: infoR.ok,
    remote: Boolean(o.executorCommand ?? o.config.executor),
    name: executorNameOf(o),
  });
}

/** The session's own executor's environment name: `--executor-name`, else local or remote. */
function executorNameOf(o: OpenSessionOptions): string {
  return o.executorName ?? defaultExecutorName(o.executorCommand ?? o.config.executor);
}

function openRollout(
  o: OpenSessionOptions,
  resumed: Resumed | undefined,
  cwd: string,
  model: ModelClient,
  started: StartedExecutor,
): Promise<Result<RolloutWriter>> {
  return openSourceRollout(o.home, resumed, {
    cwd,
    source: o.source ?? "cli",
    originator: "relay",
    cli_version: VERSION,
    model_provider: o.config.codex_provider_id ?? codexProviderId(o.config.base_url),
    wire_api: wireApiOf(model.provider),
    base_instructions: { text: BASE_INSTRUCTIONS },
    executor: { name: started.name, hostname: started.info.hostname },
    ...(o.infty ? { infty: { run_id: o.infty.runId, role: o.infty.role } } : {}),
  });
}

/** A new session's first items: its AGENTS.md instructions (a resumed one has them in history). */
async function sessionContext(
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
async function listSkills(
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
function startMcp(o: OpenSessionOptions, environments: SessionEnvironments): Promise<Result<McpServers | undefined>> {
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

interface AgentParts {
  cwd: string;
  model: ModelClient;
  started: StartedExecutor;
  rollout: RolloutWriter;
  skills: SkillReader;
  resumed: Resumed | undefined;
  mcp: Promise<Result<McpServers | undefined>>;
  /** The executor's tools/list, asked when it came up. */
  tools: Promise<Result<ToolSpec[]>>;
  sandbox: Promise<SandboxState>;
  commands: CommandSettings;
  memory: Promise<{ text?: string; warning?: string }> | undefined;
}

/** How the session's commands run: their environment, shell and sandbox policy. */
interface CommandSettings {
  env: Record<string, string>;
  shell: string;
  sandboxPolicy: SandboxPolicy;
}

function commandSettings(
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

/** The tool router (with code mode), the sandbox check and the agent with its instructions. */
async function buildAgent(
  o: OpenSessionOptions,
  p: AgentParts,
): Promise<Result<{ agent: AgentSession; codeMode?: CodeModeTools; mcp?: McpServers }>> {
  const { config } = o;
  const { cwd, started, rollout } = p;
  const { shell } = p.commands;
  const sandboxState = await p.sandbox;
  const sandboxMode = config.sandbox_mode;
  o.emit({ type: "sandbox", mode: sandboxMode, ...sandboxState });
  const tools = await connectTools(o, p);
  if ("error" in tools) return tools;
  const { router, codeMode, mcp } = tools.ok;
  const memory = await p.memory;
  if (memory?.warning) o.emit({ type: "warning", message: memory.warning });
  const memoryBlock = memory?.text;
  const sandbox_policy = codexSandboxPolicy(sandboxMode, {
    mechanism: sandboxState.mechanism,
    ...(sandboxState.gaps.length ? { best_effort_gaps: sandboxState.gaps } : {}),
  });
  const agent = new AgentSession(
    {
      model: withHeartbeat(p.model, o.emit, o.heartbeat),
      modelName: config.model,
      router,
      rollout,
      instructions: BASE_INSTRUCTIONS,
      developerInstructions: developerInstructions(
        {
          cwd,
          shell,
          approvalPolicy: config.approval_policy,
          sandboxMode,
          executor: `${started.name} (${started.info.hostname}, ${started.info.platform})`,
        },
        [skillsCatalog(p.skills.skills).text, ...(memoryBlock ? [memoryBlock] : []), ...(o.extraInstructions ?? [])],
      ),
      contextWindow: config.model_context_window ?? DEFAULT_CONTEXT_WINDOW,
      autoCompactFraction: config.auto_compact_fraction,
      maxSteps: o.maxSteps ?? 200,
      turnContext: {
        cwd,
        approval_policy: config.approval_policy,
        sandbox_policy,
        user: os.userInfo().username,
        ...modelSettings(config, p.model.provider),
        ...sessionSettings({
          codeMode: Boolean(o.codeMode),
          capabilityRoots: o.capabilityRoots ?? [],
          executorName: started.name,
          environments: o.environments ?? [],
        }),
      },
      emit: o.emit,
    },
    p.resumed?.items ?? [],
  );
  if (p.resumed) {
    const repaired = await agent.repairDanglingCalls().catch((e: unknown) => {
      if (e instanceof RecordError) return recordFailed(e, rollout.id, o);
      throw e;
    });
    if (typeof repaired !== "number") return repaired;
    if (repaired)
      o.emit({
        type: "warning",
        message: `${repaired} tool call(s) were cut off by the previous run's end; the model is told so`,
      });
  }
  return ok({ agent, codeMode, ...(mcp ? { mcp } : {}) });
}

/** The tool router over the executor's tools, with the skill tool, MCP's and code mode's. */
async function connectTools(
  o: OpenSessionOptions,
  p: AgentParts,
): Promise<Result<{ router: ToolRouter; codeMode?: CodeModeTools; mcp?: McpServers }>> {
  const { config } = o;
  const { env, shell, sandboxPolicy } = p.commands;
  const routerR = await ToolRouter.connect(
    p.started.executor.peer,
    {
      cwd: p.cwd,
      env,
      approvalPolicy: config.approval_policy,
      approvalRules: config.approval_rules,
      sandbox: sandboxPolicy,
      pinWritableRoots: o.confineWrites || o.writableRoots !== undefined,
      shellPath: shell,
      loginShell: config.shell.login,
      maxOutputTokens: config.exec.max_output_tokens,
      defaultYieldMs: config.exec.yield_time_ms,
      outputs: new OutputSpill(outputsDir(p.rollout.path), !p.started.remote),
    },
    new ApprovalCache(o.approver),
    p.tools,
  );
  if ("error" in routerR) return routerR;
  const router = routerR.ok;
  if (!p.skills.empty) router.addSessionTool({ spec: SKILL_TOOL_SPEC, call: (raw) => p.skills.call(raw) });
  const mcp = await p.mcp;
  if ("error" in mcp) return mcp;
  if (mcp.ok) router.attachMcp(mcp.ok.nameTools(router.specs.map((s) => s.name)));
  // The host starts now, while the model works on its first answer.
  const codeMode = o.codeMode ? new CodeModeTools(router) : undefined;
  if (codeMode) {
    router.attachCodeMode(codeMode);
    // A failure to start is reported by the first exec call, which opens the host again.
    codeMode.prestart().catch(() => {});
  }
  return ok({ router, ...(codeMode ? { codeMode } : {}), ...(mcp.ok ? { mcp: mcp.ok } : {}) });
}

interface HandleParts {
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
function recordFailed(e: RecordError, sessionId: string, o: OpenSessionOptions): { error: ErrorValue } {
  const resume = o.resumeCommand ?? `relay run --resume ${sessionId}`;
  const message = `the session stopped: ${e.message}; nothing after that was run. Free space (or fix the cause), then continue with: ${resume}`;
  log.warn("session record failed", { session_id: sessionId, error: e });
  o.emit({ type: "error", code: "record_failed", message });
  return err("record_failed", message, { sessionId, rolloutPath: e.path });
}

function sessionHandle(o: OpenSessionOptions, p: HandleParts): SessionHandle {
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
      // An open handle would be closed by GC, which Bun reports as an error.
      await rollout.close();
      await p.codeMode?.close();
      await p.mcp?.close();
      await p.executor.shutdown();
      await p.environments.close();
    },
  };
}
