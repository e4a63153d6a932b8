/**
 * What an MCP tool call costs through Relay, against the SDK's own client talking to the same
 * server over stdio in the same run (the baseline): a config.toml server (Relay's wrapper:
 * naming, limits, output bounds) and a capability root's server on an executor started over a
 * pipe (every message crosses the framed protocol twice). The server is the tests' fixture
 * (`test/support/mcp-fixture-server.ts`), its `echo` tool.
 *   bun scripts/bench/mcp.ts [--calls 300]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { parseMcpServers } from "../../src/config/mcp-servers.ts";
import { McpServers } from "../../src/mcp/servers.ts";
import { configTarget, executorRootTargets } from "../../src/mcp/session-mcp.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { mcpFixtureCommand } from "../../test/support/mcp.ts";
import { fmtMs, goalLine, numberFlag, printTable, ROOT, summarize, timeEach } from "./stats.ts";

const CALLS = numberFlag("--calls", 300);
const WARMUP = 20;

async function timeCalls(call: (i: number) => Promise<unknown>): Promise<number[]> {
  await timeEach(WARMUP, call);
  return timeEach(CALLS, call);
}

async function sdkDirect(): Promise<number[]> {
  const { command, args } = mcpFixtureCommand("--name", "direct");
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StdioClientTransport({ command, args }));
  try {
    return await timeCalls((i) => client.callTool({ name: "echo", arguments: { text: `x${i}` } }));
  } finally {
    await client.close();
  }
}

async function throughRelay(servers: McpServers, tool: string): Promise<number[]> {
  try {
    return await timeCalls(async (i) => {
      const r = await servers.call(tool, { text: `x${i}` });
      if (!r.success) throw new Error(`${tool} failed: ${r.output}`);
    });
  } finally {
    await servers.close();
  }
}

async function relayConfig(): Promise<number[]> {
  const { command, args } = mcpFixtureCommand("--name", "cfg");
  const parsed = parseMcpServers({ cfg: { command, args } });
  const servers = await McpServers.start(
    parsed.servers.map((e) => configTarget(e)),
    { maxOutputTokens: 10_000 },
  );
  return throughRelay(servers.nameTools([]), "cfg__echo");
}

async function relayExecutor(): Promise<number[]> {
  const root = mkdtempSync(path.join(os.tmpdir(), "relay-bench-mcp-"));
  const { command, args } = mcpFixtureCommand("--name", "root");
  writeFileSync(path.join(root, ".mcp.json"), JSON.stringify({ mcpServers: { root: { command, args } } }));
  const env = { ...process.env };
  delete env.RELAY_SELF_COMMAND;
  const ex = spawnPeer([process.execPath, path.join(ROOT, "src/main.ts"), "executor"], { env, name: "executor" });
  if ("error" in ex) throw new Error(ex.error.message);
  try {
    const found = await executorRootTargets(ex.ok.peer, "bench", root);
    const servers = await McpServers.start(found.targets, { maxOutputTokens: 10_000 });
    return await throughRelay(servers.nameTools([]), "root__echo");
  } finally {
    await ex.ok.shutdown();
    rmSync(root, { recursive: true, force: true });
  }
}

const direct = summarize(await sdkDirect());
const config = summarize(await relayConfig());
const executor = summarize(await relayExecutor());
printTable([
  ["path", "p50", "p95", "mean", "n"],
  ...(
    [
      ["SDK client, direct (baseline)", direct],
      ["relay, config.toml server", config],
      ["relay, root server on an executor", executor],
    ] as const
  ).map(([name, s]) => [name, fmtMs(s.p50), fmtMs(s.p95), fmtMs(s.mean), String(s.n)]),
]);
console.log(goalLine("mcp_call_config_vs_sdk_ratio_p50", config.p50 / direct.p50, 1.3));
console.log(goalLine("mcp_call_executor_extra_ms_p50", executor.p50 - direct.p50, 2));
