/** `relay mcp list`: the MCP servers of config.toml, started once to show their state and tools. */
import { Command } from "@commander-js/extra-typings";
import { loadConfig } from "../config/config.ts";
import { relayHome } from "../home/home.ts";
import { listMcpServers, type McpList } from "../mcp/list.ts";
import { ExitCode, fail, warn } from "./usage.ts";

function listText(list: McpList): string {
  if (list.servers.length === 0)
    return "no MCP servers configured (add [mcp_servers.NAME] to $RELAY_HOME/config.toml; see relay mcp --help)\n";
  const out: string[] = [];
  for (const s of list.servers) {
    const state = s.state === "ok" ? `ok · ${s.tools.length} tool${s.tools.length === 1 ? "" : "s"}` : s.state;
    out.push(`${s.name}${s.transport ? ` (${s.transport})` : ""}: ${state}${s.reason ? `: ${s.reason}` : ""}`);
    for (const t of s.tools)
      out.push(
        `  ${t.model_name}  ${t.read_only ? "read-only" : "may write"}${t.description ? `  ${t.description}` : ""}`,
      );
  }
  return out.join("\n") + "\n";
}

function listCommand() {
  return new Command("list")
    .description(
      "start each configured MCP server once, show its state (ok, failed with the reason, disabled) and its tools, then stop it",
    )
    .option(
      "--json",
      "print one JSON object: { servers: [{ name, state, reason?, transport?, tools: [{ name, model_name, read_only, description }] }], warnings }",
    )
    .action(async (opts) => {
      const loaded = await loadConfig(relayHome());
      if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
      const list = await listMcpServers(loaded.ok.config.mcp_servers, loaded.ok.path);
      warn([...loaded.ok.warnings, ...list.warnings]);
      process.stdout.write(opts.json ? JSON.stringify(list) + "\n" : listText(list));
      // A server that fails to start is a state, not an error; a broken entry is a config error.
      process.exit(list.servers.some((s) => s.state === "invalid") ? ExitCode.Usage : ExitCode.Ok);
    });
}

export function mcpCommand() {
  return new Command("mcp")
    .description("MCP servers: the [mcp_servers] of config.toml (Codex's shape) and the .mcp.json of capability roots")
    .addCommand(listCommand())
    .addHelpText(
      "after",
      `
Servers are configured in $RELAY_HOME/config.toml as in Codex's config.toml:
  [mcp_servers.docs]
  command = "npx"
  args = ["-y", "docs-mcp-server"]
  env_vars = ["DOCS_TOKEN"]        # passed through from relay's environment
  [mcp_servers.tracker]
  url = "https://mcp.example.com/mcp"
  bearer_token_env_var = "TRACKER_TOKEN"
A session offers their tools to the model as server__tool. Exit codes of list: 0 (even when a
server fails to start: its state says so), 2 for bad flags or a broken config entry.`,
    );
}
