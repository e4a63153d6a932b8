/**
 * The MCP servers of one session: those of config.toml `[mcp_servers]`, and those of the
 * `.mcp.json` manifests at capability roots on an executor (they run on that executor's host).
 * `executorRootTargets(peer, rootId, rootPath)` is the entry for one root on any executor peer.
 * Nothing here loads the MCP SDK: servers.ts imports it once there is a server to start.
 */

import {
  DEFAULT_STARTUP_TIMEOUT_SEC,
  DEFAULT_TOOL_TIMEOUT_SEC,
  type McpServerEntry,
  parseMcpServers,
} from "../config/mcp-servers.ts";
import type { EmitEvent } from "../contracts/events.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { err, ok, type Result } from "../util/result.ts";
import { configLink } from "./config-links.ts";
import type { McpServerTarget, McpStateChange } from "./connection.ts";
import { executorLink, readExecutorManifest } from "./executor-transport.ts";
import { McpServers, missingRequired } from "./servers.ts";

export function configTarget(entry: McpServerEntry, name = entry.name): McpServerTarget {
  return {
    name,
    origin: "config.toml",
    link: configLink(entry.name, entry.launch),
    startupTimeoutMs: entry.startupTimeoutMs,
    toolTimeoutMs: entry.toolTimeoutMs,
    ...(entry.enabledTools ? { enabledTools: entry.enabledTools } : {}),
    disabledTools: entry.disabledTools,
    required: entry.required,
  };
}

/** The servers a capability root's `.mcp.json` declares, run on the executor behind `peer`. */
export async function executorRootTargets(
  peer: RpcPeer,
  rootId: string,
  rootPath: string,
): Promise<{ targets: McpServerTarget[]; warnings: string[] }> {
  const manifest = await readExecutorManifest(peer, rootPath);
  if ("error" in manifest) {
    const old =
      manifest.error.code === "unknown_method"
        ? " (the executor is older than MCP support: update relay on that host)"
        : "";
    return {
      targets: [],
      warnings: [`capability root ${rootId}: its MCP manifest could not be read: ${manifest.error.message}${old}`],
    };
  }
  const targets = manifest.ok.servers.map(
    (s): McpServerTarget => ({
      name: s.name,
      origin: `capability root ${rootId} (${manifest.ok.path})`,
      link: executorLink(peer, s),
      startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_SEC * 1000,
      toolTimeoutMs: DEFAULT_TOOL_TIMEOUT_SEC * 1000,
      disabledTools: [],
      required: false,
    }),
  );
  return { targets, warnings: manifest.ok.warnings.map((w) => `capability root ${rootId}: ${w}`) };
}

/** One capability root on an executor the session has. */
export interface ExecutorRoot {
  peer: RpcPeer;
  rootId: string;
  rootPath: string;
}

export interface SessionMcpOptions {
  /** config.toml's raw `[mcp_servers]` table. */
  mcpServers: unknown;
  roots: ExecutorRoot[];
  maxOutputTokens: number;
  emit: EmitEvent;
}

/** Every target of the session, each name unique (a later one with a taken name gets `_2`). */
async function sessionTargets(o: SessionMcpOptions): Promise<McpServerTarget[]> {
  const config = parseMcpServers(o.mcpServers);
  for (const w of config.warnings) o.emit({ type: "warning", message: w });
  for (const bad of config.invalid) o.emit({ type: "warning", message: bad.message });
  const targets = config.servers.map((e) => configTarget(e));
  // Each root's manifest is a round trip to its executor: all at once, then in order.
  const perRoot = await Promise.all(o.roots.map((root) => executorRootTargets(root.peer, root.rootId, root.rootPath)));
  for (const found of perRoot) {
    for (const w of found.warnings) o.emit({ type: "warning", message: w });
    targets.push(...found.targets);
  }
  const used = new Set<string>();
  return targets.map((t) => {
    let name = t.name;
    for (let n = 2; used.has(name); n++) name = `${t.name}_${n}`;
    used.add(name);
    if (name !== t.name)
      o.emit({
        type: "warning",
        message: `MCP server name ${t.name} (${t.origin}) is taken; its tools are named ${name}__*`,
      });
    return { ...t, name };
  });
}

function stateEvent(emit: EmitEvent): (c: McpStateChange) => void {
  return (c) => {
    emit({
      type: "mcp_server",
      server: c.server,
      state: c.state,
      ...(c.message ? { message: c.message } : {}),
      ...(c.tools !== undefined ? { tools: c.tools } : {}),
    });
    if (c.state === "failed" || c.state === "exited")
      emit({
        type: "warning",
        message:
          c.state === "failed" && c.message && !c.message.includes("is down")
            ? `${c.message}; the session goes on without it`
            : (c.message ?? `MCP server ${c.server} ${c.state}`),
      });
  };
}

/**
 * Starts the session's servers (none: undefined, and the SDK is not loaded). Never rejects: a
 * failure is a value, so a caller may start this early and await it later.
 */
export async function openSessionMcp(o: SessionMcpOptions): Promise<Result<McpServers | undefined>> {
  try {
    return await startAll(o);
  } catch (e) {
    return err("mcp_failed", `MCP servers could not be started: ${(e as Error)?.message ?? String(e)}`);
  }
}

async function startAll(o: SessionMcpOptions): Promise<Result<McpServers | undefined>> {
  const targets = await sessionTargets(o);
  if (targets.length === 0) return ok(undefined);
  const servers = await McpServers.start(targets, { maxOutputTokens: o.maxOutputTokens, onState: stateEvent(o.emit) });
  const required = missingRequired(servers.reports);
  if ("error" in required) {
    await servers.close();
    return err(required.error.code, required.error.message);
  }
  return ok(servers);
}
