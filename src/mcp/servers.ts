/**
 * A session's MCP servers: started together, in parallel, when the session opens; their tools
 * offered to the model as `server__tool`; calls routed to the right server; all closed at the
 * end. A server that cannot start is reported (with its stderr tail) and left out.
 */

import type { ToolCallOutcome } from "../contracts/tool-outcome.ts";
import type { ModelTool } from "../model/client.ts";
import { Log } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { McpConnection, type McpServerTarget, type McpStateChange, type McpToolInfo } from "./connection.ts";
import { ToolNamer } from "./tool-names.ts";
import { mcpResultText } from "./tool-result.ts";
import { toolParameters } from "./tool-schema.ts";

const log = Log.create("mcp");
const MAX_DESCRIPTION_CHARS = 2000;

/** One MCP tool as the model sees it, and where it goes. */
export interface McpModelTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  readOnly: boolean;
  server: string;
  tool: string;
}

/** What a server's start came to, for the session's events and `relay mcp list`. */
export interface McpServerReport {
  name: string;
  origin: string;
  state: "ok" | "failed";
  reason?: string;
  required: boolean;
  tools: McpToolInfo[];
}

export interface McpStartOptions {
  /** The session's output budget in tokens (exec's max_output_tokens). */
  maxOutputTokens: number;
  onState?: (c: McpStateChange) => void;
}

/** What the tool router asks of the MCP side. */
export interface McpToolSource {
  modelTools(): ModelTool[];
  has(name: string): boolean;
  isReadOnly(name: string): boolean;
  /** `args` is what the model sent, already parsed. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolCallOutcome>;
  readonly toolList: ReadonlyArray<{ name: string; description: string }>;
}

export class McpServers implements McpToolSource {
  private readonly byName = new Map<string, { tool: McpModelTool; connection: McpConnection }>();

  private constructor(
    private readonly connections: McpConnection[],
    readonly reports: McpServerReport[],
    private readonly maxOutputTokens: number,
  ) {}

  /** Names the tools for the model; `taken` are the executor's tool names. Call once, before offering them. */
  nameTools(taken: Iterable<string>): this {
    const namer = new ToolNamer(taken);
    this.byName.clear();
    for (const c of this.connections) {
      if (c.status.state !== "ready") continue;
      for (const t of c.tools) {
        const name = namer.name(c.name, t.name);
        const params = toolParameters(t.inputSchema);
        const description =
          [t.description.slice(0, MAX_DESCRIPTION_CHARS), params.note].filter(Boolean).join(" ") ||
          `${t.name} (MCP server ${c.name})`;
        this.byName.set(name, {
          tool: {
            name,
            description,
            parameters: params.parameters,
            readOnly: t.readOnly,
            server: c.name,
            tool: t.name,
          },
          connection: c,
        });
      }
    }
    return this;
  }

  /** Starts every target at once; resolves when each has started or failed. */
  static async start(targets: McpServerTarget[], o: McpStartOptions): Promise<McpServers> {
    const sdk = await import("@modelcontextprotocol/sdk/client/index.js");
    const connections = targets.map((t) => new McpConnection(t, sdk, o.onState ?? (() => {})));
    const reports = await Promise.all(
      connections.map(async (c): Promise<McpServerReport> => {
        o.onState?.({ server: c.name, state: "starting" });
        const r = await c.start();
        const base = { name: c.name, origin: c.target.origin, required: c.target.required };
        if ("error" in r) {
          log.warn("mcp server failed to start", { server: c.name, error: r.error.message });
          o.onState?.({ server: c.name, state: "failed", message: r.error.message });
          return { ...base, state: "failed", reason: r.error.message, tools: [] };
        }
        o.onState?.({ server: c.name, state: "ready", tools: r.ok.length });
        return { ...base, state: "ok", tools: r.ok };
      }),
    );
    return new McpServers(connections, reports, o.maxOutputTokens);
  }

  get toolList(): ReadonlyArray<{ name: string; description: string }> {
    return [...this.byName.values()].map(({ tool }) => ({ name: tool.name, description: tool.description }));
  }

  get tools(): McpModelTool[] {
    return [...this.byName.values()].map(({ tool }) => tool);
  }

  modelTools(): ModelTool[] {
    return this.tools.map((t) => ({
      kind: "function",
      name: t.name,
      description: t.description,
      parameters: t.parameters,
    }));
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  isReadOnly(name: string): boolean {
    return this.byName.get(name)?.tool.readOnly ?? false;
  }

  async call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<ToolCallOutcome> {
    const entry = this.byName.get(name);
    const display = `${name} ${summarize(args)}`.trim();
    if (!entry) return { output: `unknown MCP tool ${JSON.stringify(name)}`, success: false, display };
    const r = await entry.connection.call(entry.tool.tool, args, signal);
    if ("error" in r) return { output: r.error.message, success: false, display };
    const text = mcpResultText(r.ok, this.maxOutputTokens);
    if (text.isError)
      return {
        output: `MCP tool ${entry.tool.tool} of server ${entry.tool.server} reported an error:\n${text.text}`,
        success: false,
        display,
      };
    return { output: text.text, success: true, display };
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}

function summarize(args: Record<string, unknown>): string {
  const text = JSON.stringify(args);
  return text === "{}" ? "" : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Required servers that did not start: the session must not go on without them. */
export function missingRequired(reports: McpServerReport[]): Result<null> {
  const missing = reports.filter((r) => r.required && r.state === "failed");
  if (missing.length === 0) return ok(null);
  return err(
    "mcp_required_failed",
    `${missing.map((m) => m.reason).join("; ")} (the server is required = true in its [mcp_servers] entry, so the session does not start without it)`,
  );
}
