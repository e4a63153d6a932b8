/** Helpers for MCP tests: how to start the fixture server, and config blocks that name it. */
import path from "node:path";
import { REPO_ROOT } from "./paths.ts";

export const MCP_FIXTURE = path.join(REPO_ROOT, "test/support/mcp-fixture-server.ts");

/** The repo's bun: the fixture runs under it whichever runtime runs the tests. */
export function bunPath(): string {
  return process.versions.bun ? process.execPath : path.join(REPO_ROOT, "node_modules/.bin/bun");
}

/** The command line that starts the fixture server. */
export function mcpFixtureCommand(...extra: string[]): { command: string; args: string[] } {
  return { command: bunPath(), args: [MCP_FIXTURE, ...extra] };
}

/** A TOML string (basic string, escaped). */
export const tomlString = (s: string): string => JSON.stringify(s);

/** `[mcp_servers.NAME]` for the fixture, as a Codex user would write it. */
export function fixtureToml(name: string, extra: string[] = [], lines: string[] = []): string {
  const { command, args } = mcpFixtureCommand("--name", name, ...extra);
  return [
    `[mcp_servers.${name}]`,
    `command = ${tomlString(command)}`,
    `args = [${args.map(tomlString).join(", ")}]`,
    ...lines,
    "",
  ].join("\n");
}
