/**
 * The executor server: answers the executor methods on a peer. It advertises tool specs,
 * runs processes and file tools on this host, and applies the sandbox attempt it is given.
 */
import os from "node:os";
import path from "node:path";
import { EXEC_COMMAND_DESCRIPTION, WRITE_STDIN_DESCRIPTION } from "../contracts/exec-tools.ts";
import {
  type ExecCommandParams,
  type ExecutorInfo,
  ExecutorMethods,
  ProcessExitedNotification,
  type ToolSpec,
} from "../contracts/executor.ts";
import { ProjectDocsMethod } from "../contracts/project-docs.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";
import { SkillsListMethod, SkillsReadMethod } from "../contracts/skills.ts";
import { ptySupported } from "../process/spawn/index.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { prepareSandbox, probeSandbox } from "../sandbox/index.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { currentRuntime } from "../util/runtime.ts";
import { VERSION } from "../version.ts";
import { readProjectDocs } from "../workspace/project-docs.ts";
import { discoverSkills, readSkill } from "../workspace/skills.ts";
import { fileTools } from "./file-tools.ts";
import { McpStdioHost } from "./mcp-stdio.ts";
import { type ManagerOptions, ProcessManager } from "./process-manager.ts";
import { type ExecutorTool, parseToolArgs } from "./tool.ts";
import { execToolSchema, toolJsonSchema } from "./tool-schemas.ts";

const log = Log.create("executor");

export interface ExecutorServerOptions extends ManagerOptions {
  tools?: ExecutorTool[];
}

export function toolSpecs(tools: ExecutorTool[]): ToolSpec[] {
  return [
    {
      name: "exec_command",
      description: EXEC_COMMAND_DESCRIPTION,
      input_schema: execToolSchema("exec_command"),
      read_only: false,
      route: "exec",
    },
    {
      name: "write_stdin",
      description: WRITE_STDIN_DESCRIPTION,
      input_schema: execToolSchema("write_stdin"),
      read_only: false,
      route: "write_stdin",
    },
    ...tools.map(
      (t): ToolSpec => ({
        name: t.name,
        description: t.description,
        input_schema: toolJsonSchema(t),
        read_only: t.readOnly,
        route: "call",
      }),
    ),
  ];
}

/** Decides the sandbox to apply from the request, refusing what approval does not cover. */
function effectiveSandbox(
  req: ExecCommandParams,
): Result<SandboxPolicy, "forbidden" | "approval_required" | "escalation_not_approved"> {
  const approval = req.exec_approval_requirement;
  if (approval.type === "forbidden") return err("forbidden", `the command is forbidden by policy: ${approval.reason}`);
  if (approval.type === "needs_approval" && !approval.approved) {
    return err(
      "approval_required",
      `the command needs approval and was not approved${approval.reason ? ` (${approval.reason})` : ""}`,
    );
  }
  const approved = req.additional_permissions_preapproved || (approval.type === "needs_approval" && approval.approved);
  const base: SandboxPolicy = req.sandbox;
  if (req.sandbox_permissions === "require_escalated") {
    if (!approved)
      return err(
        "escalation_not_approved",
        "require_escalated was asked without approval; the orchestrator must approve escalation first",
      );
    return ok({ mode: "danger-full-access", writable_roots: [], network: true });
  }
  const extra = req.additional_permissions;
  if (extra && (extra.network || extra.writable_roots?.length)) {
    if (!approved) return err("escalation_not_approved", "additional_permissions were asked without approval");
    return ok({
      ...base,
      network: base.network || Boolean(extra.network),
      writable_roots: [...base.writable_roots, ...(extra.writable_roots ?? [])],
    });
  }
  return ok(base);
}

/** What keeps a sandboxed command from outliving the executor, where the built-in mechanism is not used. */
function containmentWithout(mechanism: string): string {
  if (mechanism === "bubblewrap")
    return "each sandboxed command has its own pid namespace (bubblewrap --unshare-pid --die-with-parent): its background jobs end with it";
  return "best effort: commands are tracked by their environment marker and process group";
}

/**
 * `executor/info`'s sandbox part. The container starts here (built-in mechanism): with `wait`
 * the answer waits for it and says whether it holds; with `start` (a session, once set up) it
 * starts in the background with whatever spare helpers the plan `sandbox/check` noted needs, and
 * a failed start is reported again by the first command that needs the container; with `later`
 * nothing starts.
 */
async function sandboxInfo(
  manager: ProcessManager,
  asked: "wait" | "start" | "later",
): Promise<ExecutorInfo["sandbox"]> {
  const sandbox = await probeSandbox();
  log.debug("sandbox probed", { available: sandbox.available, mechanism: sandbox.mechanism, detail: sandbox.detail });
  const about = { available: sandbox.available, mechanism: sandbox.mechanism, detail: sandbox.detail };
  if (asked === "start") manager.prewarmSandbox(sandbox.mechanism === "landlock");
  if (asked !== "wait") return { ...about, warm_helpers: manager.warmStats() };
  const starting = sandbox.mechanism === "landlock" ? manager.container() : undefined;
  const contained = await starting;
  const containment = contained
    ? { enforced: contained.ref !== undefined, detail: contained.detail }
    : { enforced: false, detail: containmentWithout(sandbox.mechanism) };
  return { ...about, containment, warm_helpers: manager.warmStats() };
}

export function serveExecutor(peer: RpcPeer, options: ExecutorServerOptions = {}): ProcessManager {
  const tools = options.tools ?? fileTools;
  const manager = new ProcessManager({
    ...options,
    onExit: (process_id, exit_code) => {
      log.debug("process exited", { process_id, exit_code });
      peer.notify(ProcessExitedNotification, { process_id, exit_code });
      options.onExit?.(process_id, exit_code);
    },
  });
  peer.handle(ExecutorMethods.info, async (req) =>
    ok(hostInfo(await sandboxInfo(manager, req?.containment ?? "wait"))),
  );
  peer.handle(ExecutorMethods.toolsList, () => ok({ tools: toolSpecs(tools) }));
  handleProcesses(peer, manager);
  peer.handle(SkillsListMethod, async (req) => ok(await discoverSkills(req.roots, req.max_depth)));
  peer.handle(SkillsReadMethod, (req) => readSkill(req.path, req.offset, req.max_bytes));
  peer.handle(ProjectDocsMethod, async (req) => ok(await readProjectDocs(req.cwd, req.names, req.max_bytes)));
  new McpStdioHost(peer, (suffix) => manager.marker(suffix)).register(manager);
  handleToolCalls(peer, tools);
  log.info("serving", { tools: tools.length + 2, pty: ptySupported() });
  return manager;
}

function hostInfo(sandbox: Awaited<ReturnType<typeof sandboxInfo>>) {
  return {
    version: VERSION,
    runtime: currentRuntime(),
    platform: process.platform,
    arch: process.arch,
    hostname: os.hostname(),
    pid: process.pid,
    home: os.homedir(),
    pty: ptySupported(),
    sandbox,
  };
}

/** exec, the sandbox check, and the calls on running processes. */
function handleProcesses(peer: RpcPeer, manager: ProcessManager): void {
  peer.handle(ExecutorMethods.exec, async (req) => {
    // The program's name only: arguments may carry what the model put there.
    const program = path.basename(req.command[0] ?? "");
    const sandbox = effectiveSandbox(req);
    if ("error" in sandbox) {
      log.info("command refused", { program, code: sandbox.error.code });
      return sandbox;
    }
    const container = sandbox.ok.mode === "danger-full-access" ? undefined : (await manager.container()).ref;
    const attempt = await prepareSandbox(req.command, sandbox.ok, {
      cwd: req.cwd,
      tty: req.tty,
      env: req.env,
      container,
    });
    if ("error" in attempt) {
      log.warn("sandbox refused", {
        program,
        mode: sandbox.ok.mode,
        code: attempt.error.code,
        message: attempt.error.message,
      });
      return attempt;
    }
    log.debug("exec", {
      program,
      mode: sandbox.ok.mode,
      mechanism: attempt.ok.mechanism,
      gaps: attempt.ok.gaps.length ? attempt.ok.gaps : undefined,
      tty: req.tty,
      warm: attempt.ok.warm ? true : undefined,
    });
    return manager.exec({
      ...req,
      sandboxedArgv: attempt.ok.argv,
      sandboxEnv: attempt.ok.env,
      warmLaunch: attempt.ok.warm,
    });
  });
  peer.handle(ExecutorMethods.sandboxCheck, async (req) => {
    const attempt = await prepareSandbox(["true"], req.sandbox, { cwd: req.cwd, tty: false, env: req.env });
    if ("error" in attempt) return attempt;
    // Noted, not started: the container starts once the session is set up (executor/info `start`).
    if (attempt.ok.warm) manager.noteSandboxPlan(attempt.ok.warm.plan);
    return ok({ mechanism: attempt.ok.mechanism, gaps: attempt.ok.gaps });
  });
  peer.handle(ExecutorMethods.write, (req) => manager.write(req));
  peer.handle(ExecutorMethods.readOutput, (req) => manager.readOutput(req));
  peer.handle(ExecutorMethods.terminate, async (req) => ok(await manager.terminate(req.process_id)));
  peer.handle(ExecutorMethods.list, () => ok({ processes: manager.list() }));
}

function handleToolCalls(peer: RpcPeer, tools: readonly ExecutorTool[]): void {
  const byName = new Map(tools.map((t) => [t.name, t]));
  peer.handle(ExecutorMethods.toolsCall, async (req, ctx) => {
    const tool = byName.get(req.name);
    if (!tool)
      return err(
        "unknown_tool",
        `unknown tool ${JSON.stringify(req.name)}; this executor has: ${[...byName.keys()].join(", ")}`,
      );
    const args = parseToolArgs(tool, req.arguments);
    if ("error" in args) return args;
    return tool.execute(args.ok, { cwd: req.cwd, sandbox: req.sandbox, signal: ctx.signal });
  });
}
