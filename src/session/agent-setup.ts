/**
 * The session's agent: the tool router over the executor's tools (with the skill tool, MCP's and
 * code mode's), the sandbox verdict, the instructions and the turn context; a resumed session's
 * cut-off tool calls are repaired here.
 */

import os from "node:os";
import { skillsCatalog } from "../capabilities/skill-catalog.ts";
import { SKILL_TOOL_SPEC, type SkillReader } from "../capabilities/skill-tool.ts";
import { modelSettings, sessionSettings } from "../config/resume-settings.ts";
import type { ToolSpec } from "../contracts/executor.ts";
import type { McpServers } from "../mcp/servers.ts";
import type { ModelClient } from "../model/client.ts";
import { ApprovalCache } from "../policy/approval.ts";
import type { SandboxState } from "../policy/sandbox-check.ts";
import { codexSandboxPolicy } from "../rollout/codex-compat.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import { ok, type Result } from "../util/result.ts";
import { AgentSession, RecordError } from "./agent.ts";
import { CodeModeTools } from "./code-mode.ts";
import { recordFailed } from "./handle.ts";
import { BASE_INSTRUCTIONS, developerInstructions } from "./instructions.ts";
import type { OpenSessionOptions } from "./open-options.ts";
import type { CommandSettings, StartedExecutor } from "./open-parts.ts";
import { OutputSpill, outputsDir } from "./output-spill.ts";
import type { Resumed } from "./source.ts";
import { ToolRouter } from "./tool-router.ts";
import { withHeartbeat } from "./waiting.ts";

export const DEFAULT_CONTEXT_WINDOW = 128_000;

export interface AgentParts {
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

/** The tool router (with code mode), the sandbox check and the agent with its instructions. */
export async function buildAgent(
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
