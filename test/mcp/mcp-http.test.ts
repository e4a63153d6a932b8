/**
 * A streamable HTTP MCP server on loopback (the SDK's server side, in this process, stateless),
 * behind a bearer token: relay sends the token from the variable `bearer_token_env_var` names,
 * and a wrong or missing token is a clear error while the session goes on.
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { parseConfig } from "../../src/config/config.ts";
import { type Harness, harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";

const TOKEN = "s3cret-token";

interface HttpMcp extends AsyncDisposable {
  url: string;
  /** The Authorization and X-Team headers of every request. */
  seen: Array<{ auth?: string; team?: string }>;
}

async function startHttpMcp(): Promise<HttpMcp> {
  const seen: HttpMcp["seen"] = [];
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ auth: req.headers.authorization, team: req.headers["x-team"] as string | undefined });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid token" }));
      return;
    }
    const mcp = new McpServer({ name: "http-fixture", version: "1.0.0" });
    mcp.registerTool(
      "lookup",
      { description: "Looks a key up.", inputSchema: { key: z.string() }, annotations: { readOnlyHint: true } },
      async ({ key }) => ({ content: [{ type: "text", text: `value of ${key}` }] }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

function config(h: Harness, url: string, tokenVar: string) {
  const toml = `[mcp_servers.kb]\nurl = "${url}"\nbearer_token_env_var = "${tokenVar}"\nhttp_headers = { "X-Team" = "core" }\n`;
  const parsed = parseConfig(toml, "config.toml");
  assert.ok("ok" in parsed, JSON.stringify(parsed));
  return h.config({ mcp_servers: parsed.ok.config.mcp_servers });
}

describe("streamable HTTP MCP servers", () => {
  test("the bearer token comes from the named variable; tools are called over HTTP", async () => {
    await using h = await harness();
    await using mcp = await startHttpMcp();
    process.env.RELAY_TEST_MCP_TOKEN = TOKEN;
    try {
      h.server.enqueue(reply().toolCall("kb__lookup", { key: "answer" }, { callId: "c" }), reply().text("ok"));
      const r = await h.run({ prompt: "p", config: config(h, mcp.url, "RELAY_TEST_MCP_TOKEN") });
      assert.ok("ok" in r, JSON.stringify(r));
      const out = inputOf(h.server.requests[1]!.body).find(
        (i) => i.type === "function_call_output" && i.call_id === "c",
      );
      assert.equal(out?.output, "value of answer");
      assert.ok(
        mcp.seen.length > 0 && mcp.seen.every((s) => s.auth === `Bearer ${TOKEN}` && s.team === "core"),
        JSON.stringify(mcp.seen),
      );
    } finally {
      delete process.env.RELAY_TEST_MCP_TOKEN;
    }
  });

  test("a wrong token is a clear error (unauthorized, names the variable's role); a missing variable says which to set", async () => {
    await using h = await harness();
    await using mcp = await startHttpMcp();
    process.env.RELAY_TEST_MCP_TOKEN = "wrong";
    try {
      h.server.enqueue(reply().text("ok"), reply().text("ok"));
      const wrong = await h.run({ prompt: "p", config: config(h, mcp.url, "RELAY_TEST_MCP_TOKEN") });
      assert.ok("ok" in wrong, JSON.stringify(wrong));
      const missing = await h.run({ prompt: "p", config: config(h, mcp.url, "RELAY_TEST_MCP_UNSET_TOKEN") });
      assert.ok("ok" in missing, JSON.stringify(missing));
    } finally {
      delete process.env.RELAY_TEST_MCP_TOKEN;
    }
    const warnings = h.events.filter((e) => e.type === "warning").map((e) => (e as { message: string }).message);
    assert.match(
      warnings[0] ?? "",
      /^MCP server kb refused the connection as unauthorized \(HTTP 401\): check the token in RELAY_TEST_MCP_TOKEN \(bearer_token_env_var of \[mcp_servers.kb\]\)/,
    );
    assert.match(
      warnings[1] ?? "",
      /^MCP server kb: bearer_token_env_var of \[mcp_servers\.kb\] names RELAY_TEST_MCP_UNSET_TOKEN, which is not set; export RELAY_TEST_MCP_UNSET_TOKEN=<token>/,
    );
  });
});
