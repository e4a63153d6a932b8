/**
 * Starts one session end to end: model client, executor (spawned or remote), skills, rollout
 * (new or resumed), tool router, and the agent loop for one user turn.
 */
import os from "node:os";
import path from "node:path";
import { ExecutorMethods, type ExecutorInfo } from "../executor/protocol.ts";
import { SkillsListMethod, SkillsReadMethod, type Skill } from "../executor/skills.ts";
import { ModelError, type ModelClient } from "../model/client.ts";
import { createModelClient } from "../model/factory.ts";
import { userMessage, type ResponseItem } from "../model/items.ts";
import { spawnCommandLine, spawnSelf, type ChildPeer } from "../protocol/child.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import { AgentSession, type TurnOutcome } from "./agent.ts";
import { ApprovalCache, type Approver } from "./approval.ts";
import type { RelayConfig } from "./config.ts";
import { commandEnv } from "./env.ts";
import type { EmitEvent } from "./events.ts";
import { BASE_INSTRUCTIONS, developerInstructions, skillsCatalog } from "./instructions.ts";
import { readRollout } from "../rollout/reader.ts";
import { findRollout } from "../rollout/find.ts";
import { RolloutWriter } from "../rollout/writer.ts";
import { pickShell } from "./shell.ts";
import type { CapabilityRoot } from "./capability-root.ts";
import { modelSettings, reasoningOf, sessionSettings } from "./resume-settings.ts";
import { checkSandbox, sessionSandboxPolicy } from "./sandbox-check.ts";
import { ToolRouter } from "./tool-router.ts";
import { CodeModeTools } from "./code-mode.ts";

export const DEFAULT_CONTEXT_WINDOW = 128_000;
export { parseCapabilityRoot, type CapabilityRoot } from "./capability-root.ts";


export interface SessionRunOptions {
  home: string;
  config: RelayConfig;
  prompt?: string;
  /** A session id, unique id prefix, `last`, or a rollout path. */
  resume?: string;
  cwd?: string;
  scriptPath?: string;
  /** Command line of a remote executor; default: re-exec relay's own `executor`. */
  executorCommand?: string;
  /** Environment name of this session's executor (`local` for the built-in one). */
  executorName?: string;
  capabilityRoots?: CapabilityRoot[];
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
  /** Runs one user turn (no prompt: continue unfinished work after a resume). */
  runTurn(prompt: string | undefined, signal: AbortSignal): Promise<Result<TurnOutcome>>;
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
      return err("nothing_to_resume", `session ${s.id} has no unfinished turn; pass a prompt to continue it: relay run --resume ${s.id} "next request"`);
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
  /** The block added to the developer instructions (the memory summary), if any. */
  block(home: string): Promise<string | undefined>;
  /** Counts the memory citations in a turn's final message; how many were recorded. */
  recordCitations(home: string, finalMessage: string): Promise<Result<number>>;
}

export async function openSession(o: OpenSessionOptions): Promise<Result<SessionHandle>> {
  const { config } = o;
  // Resume first: it decides the cwd and the history.
  let resumed: { path: string; items: ResponseItem[]; cwd: string } | undefined;
  if (o.resume) {
    const found = await findRollout(o.home, o.resume, { listHint: "start one with `relay run \"...\"`" });
    if ("error" in found) return found;
    const r = await readRollout(found.ok.path);
    if ("error" in r) return r;
    for (const w of r.ok.warnings) o.emit({ type: "warning", message: w });
    resumed = { path: found.ok.path, items: r.ok.items, cwd: String(r.ok.meta.cwd) };
  }
  if (!resumed && o.requirePrompt && o.firstPrompt === undefined) return err("usage", "a prompt is required (or --resume <id|last> to continue a session)");
  const cwd = path.resolve(o.cwd ?? resumed?.cwd ?? process.cwd());

  let model: ModelClient;
  try {
    model = o.model ?? createModelClient({
      provider: o.scriptPath ? "scripted" : config.model_provider,
      model: config.model,
      baseUrl: config.base_url,
      apiKeyEnv: config.api_key_env,
      scriptPath: o.scriptPath,
      ...(reasoningOf(config) ? { reasoning: reasoningOf(config) } : {}),
    });
  } catch (e) {
    return err("model_config", (e as Error).message);
  }

  const exec = startExecutor(o.executorCommand ?? config.executor);
  if ("error" in exec) return exec;
  const executor = exec.ok;
  let rolloutToClose: RolloutWriter | undefined;
  let handedOver = false;
  try {
    const infoR = await executor.peer.call(ExecutorMethods.info, {}, { timeoutMs: 60_000 });
    if ("error" in infoR) return err("executor_unavailable", `the executor did not start: ${infoR.error.message}`);
    const info: ExecutorInfo = infoR.ok;
    const remote = Boolean(o.executorCommand ?? config.executor);
    const executorName = o.executorName ?? (remote ? "remote" : "local");

    const writer = resumed
      ? await RolloutWriter.resume(resumed.path)
      : await RolloutWriter.create({
          home: o.home,
          meta: {
            cwd,
            source: o.source ?? "cli",
            originator: "relay",
            cli_version: VERSION,
            model_provider: model.provider,
            base_instructions: { text: BASE_INSTRUCTIONS },
            executor: { name: executorName, hostname: info.hostname },
          },
        });
    if ("error" in writer) return writer;
    const rollout = writer.ok;
    rolloutToClose = rollout;
    o.emit({ type: "session_started", session_id: rollout.id, rollout_path: rollout.path, model: config.model, provider: model.provider, cwd, resumed: Boolean(resumed) });

    // Skills come from the executor's filesystem only; never from ours.
    const skills: Skill[] = [];
    for (const root of o.capabilityRoots ?? []) {
      if (root.environment !== executorName) {
        o.emit({ type: "warning", message: `capability root ${root.environment}:${root.path} skipped: this session has no executor named "${root.environment}" (its executor is "${executorName}"); skills are never read from the local filesystem instead` });
        continue;
      }
      const listed = await executor.peer.call(SkillsListMethod, { roots: [root.path] });
      if ("error" in listed) {
        o.emit({ type: "warning", message: `capability root ${root.environment}:${root.path} unavailable: ${listed.error.message}` });
        continue;
      }
      for (const w of listed.ok.warnings) o.emit({ type: "warning", message: `capability root ${root.environment}:${w.root}: ${w.message}` });
      skills.push(...listed.ok.skills);
    }
    const catalog = skillsCatalog(skills);

    const sandboxMode = config.sandbox_mode;
    const env = remote
      ? { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", HOME: info.home, RELAY_SESSION_ID: rollout.id }
      : commandEnv(rollout.id);
    const shell = remote ? (config.shell.path ?? "/bin/bash") : pickShell({ configured: config.shell.path, login: config.shell.login });
    const sandboxPolicy = sessionSandboxPolicy(config, cwd, o.confineWrites);
    const sandboxState = await checkSandbox(executor.peer, sandboxPolicy, cwd, env);
    o.emit({ type: "sandbox", mode: sandboxMode, ...sandboxState });
    const approvals = new ApprovalCache(o.approver);
    const routerR = await ToolRouter.connect(
      executor.peer,
      {
        cwd,
        env,
        approvalPolicy: config.approval_policy,
        sandbox: sandboxPolicy,
        pinWritableRoots: o.confineWrites,
        shellPath: shell,
        loginShell: config.shell.login,
        maxOutputTokens: config.exec.max_output_tokens,
        defaultYieldMs: config.exec.yield_time_ms,
      },
      approvals,
    );
    if ("error" in routerR) return routerR;
    // The host starts now, while the model works on its first answer.
    const codeMode = o.codeMode ? new CodeModeTools(routerR.ok) : undefined;
    if (codeMode) {
      routerR.ok.attachCodeMode(codeMode);
      codeMode.prestart();
    }

    const memoryBlock = await o.memories?.block(o.home);
    const agent = new AgentSession(
      {
        model,
        modelName: config.model,
        router: routerR.ok,
        rollout,
        instructions: BASE_INSTRUCTIONS,
        developerInstructions: developerInstructions(
          { cwd, shell, approvalPolicy: config.approval_policy, sandboxMode, executor: `${executorName} (${info.hostname}, ${info.platform})` },
          [catalog.text, ...(memoryBlock ? [memoryBlock] : []), ...(o.extraInstructions ?? [])],
        ),
        contextWindow: config.model_context_window ?? DEFAULT_CONTEXT_WINDOW,
        autoCompactFraction: config.auto_compact_fraction,
        maxSteps: o.maxSteps ?? 200,
        turnContext: { cwd, approval_policy: config.approval_policy, sandbox_policy: { mode: sandboxMode, mechanism: sandboxState.mechanism, ...(sandboxState.gaps.length ? { best_effort_gaps: sandboxState.gaps } : {}) }, user: os.userInfo().username, ...modelSettings(config, model.provider), ...sessionSettings({ codeMode: Boolean(o.codeMode), capabilityRoots: o.capabilityRoots ?? [], executorName }) },
        emit: o.emit,
      },
      resumed?.items ?? [],
    );

    if (resumed) {
      const repaired = await agent.repairDanglingCalls();
      if (repaired) o.emit({ type: "warning", message: `${repaired} tool call(s) were cut off by the previous run's end; the model is told so` });
    }

    let closed = false;
    const handle: SessionHandle = {
      id: rollout.id,
      rolloutPath: rollout.path,
      agent,
      cwd,
      async runTurn(prompt, signal) {
        const preamble = await skillPreamble(prompt ?? "", skills, executor.peer, o.emit);
        try {
          const outcome = await agent.runTurn(prompt, signal, preamble);
          if (o.memories && outcome.finalMessage.includes("<oai-mem-citation>")) {
            const used = await o.memories.recordCitations(o.home, outcome.finalMessage);
            if ("error" in used) o.emit({ type: "warning", message: `memory citations were not counted: ${used.error.message}` });
          }
          return ok(outcome);
        } catch (e) {
          await rollout.flush();
          const code = e instanceof ModelError ? `model_${e.code}` : "turn_failed";
          const message = `${(e as Error).message} (the session is saved; continue it with: relay run --resume ${rollout.id})`;
          o.emit({ type: "error", code, message });
          return err(code, message, { sessionId: rollout.id, rolloutPath: rollout.path });
        }
      },
      async close() {
        if (closed) return;
        closed = true;
        // An open handle would be closed by GC, which Bun reports as an error.
        await rollout.close();
        await codeMode?.close();
        await executor.shutdown();
      },
    };
    handedOver = true;
    return ok(handle);
  } finally {
    if (!handedOver) {
      await rolloutToClose?.close();
      await executor.shutdown();
    }
  }
}

/** `$skill-name` in a prompt loads that skill's body through the same executor. */
async function skillPreamble(prompt: string, skills: Skill[], peer: RpcPeer, emit: EmitEvent): Promise<ResponseItem[]> {
  const preamble: ResponseItem[] = [];
  for (const m of new Set([...prompt.matchAll(/\$([A-Za-z0-9][A-Za-z0-9_.-]*)/g)].map((x) => x[1]!))) {
    const skill = skills.find((s) => s.name === m);
    if (!skill) continue;
    const body = await peer.call(SkillsReadMethod, { path: skill.path });
    if ("error" in body) {
      emit({ type: "warning", message: `skill $${m}: ${body.error.message}` });
      continue;
    }
    preamble.push(userMessage(`<skill name="${skill.name}" path="${skill.path}">\n${body.ok.body}\n</skill>`));
  }
  return preamble;
}
