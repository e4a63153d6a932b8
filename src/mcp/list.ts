/**
 * `relay mcp list`: every server of config.toml `[mcp_servers]` started once, its state (ok,
 * failed with the reason, disabled, invalid) and its tools, then stopped.
 */
import { z } from "zod";
import { parseMcpServers } from "../config/mcp-servers.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { McpServers } from "./servers.ts";
import { configTarget } from "./session-mcp.ts";

export const McpListToolSchema = lazySchema(() =>
  z.object({
    /** The tool's name on its server. */
    name: z.string(),
    /** The name the model calls it by (`server__tool`). */
    model_name: z.string(),
    read_only: z.boolean(),
    /** The first line of its description. */
    description: z.string(),
  }),
);

export const McpListServerSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    /** ok: started and listed its tools; failed: `reason` says why; disabled: enabled = false; invalid: the entry is broken (`reason`). */
    state: z.enum(["ok", "failed", "disabled", "invalid"]),
    reason: z.string().optional(),
    transport: z.enum(["stdio", "http"]).optional(),
    tools: z.array(McpListToolSchema),
  }),
);

export const McpListSchema = lazySchema(() =>
  z.object({ servers: z.array(McpListServerSchema), warnings: z.array(z.string()) }),
);
export type McpList = z.infer<typeof McpListSchema>;

const firstLine = (s: string) =>
  s
    .split("\n")
    .find((l) => l.trim() !== "")
    ?.trim() ?? "";

/** Starts every enabled server of `raw` (config.toml's `[mcp_servers]`) in parallel, lists them, stops them. */
export async function listMcpServers(raw: unknown, where = "config.toml"): Promise<McpList> {
  const config = parseMcpServers(raw, where);
  const rows: McpList["servers"] = [];
  for (const bad of config.invalid) rows.push({ name: bad.name, state: "invalid", reason: bad.message, tools: [] });
  for (const name of config.disabled) rows.push({ name, state: "disabled", tools: [] });
  if (config.servers.length > 0) {
    const servers = await McpServers.start(
      config.servers.map((e) => configTarget(e)),
      { maxOutputTokens: 10_000 },
    );
    try {
      const named = servers.nameTools([]).tools;
      for (const report of servers.reports) {
        const entry = config.servers.find((s) => s.name === report.name)!;
        const tools = report.tools.map((t) => ({
          name: t.name,
          model_name: named.find((n) => n.server === report.name && n.tool === t.name)?.name ?? "",
          read_only: t.readOnly,
          description: firstLine(t.description),
        }));
        rows.push({
          name: report.name,
          state: report.state,
          ...(report.reason ? { reason: report.reason } : {}),
          transport: entry.launch.type,
          tools,
        });
      }
    } finally {
      await servers.close();
    }
  }
  rows.sort((a, b) => a.name.localeCompare(b.name));
  return { servers: rows, warnings: config.warnings };
}
