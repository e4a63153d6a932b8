/** The pure parts of MCP support, at their edges: config, tool names, schemas, results, the executor's line splitter and manifest. */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { parseMcpServers } from "../../src/config/mcp-servers.ts";
import { readMcpManifest } from "../../src/executor/mcp-manifest.ts";
import { LineSplitter } from "../../src/executor/mcp-stdio.ts";
import { httpHeaders, stdioEnv } from "../../src/mcp/config-links.ts";
import { ToolNamer } from "../../src/mcp/tool-names.ts";
import { mcpResultText } from "../../src/mcp/tool-result.ts";
import { toolParameters } from "../../src/mcp/tool-schema.ts";

describe("MCP parts", () => {
  test("config: defaults, Codex's older startup_timeout_ms, http entries; misplaced keys warn; both command and url is an error", () => {
    const c = parseMcpServers({
      a: { command: "srv" },
      b: { command: "srv", startup_timeout_ms: 2500, tool_timeout_sec: 1.5, http_headers: { X: "y" } },
      c: { url: "https://h.example/mcp", bearer_token_env_var: "TOK", env_http_headers: { "X-Key": "KEY" } },
      d: { command: "x", url: "https://h.example/mcp" },
      e: "not a table",
    });
    assert.deepEqual(
      c.servers.map((s) => [s.name, s.startupTimeoutMs, s.toolTimeoutMs, s.launch.type]),
      [
        ["a", 10_000, 60_000, "stdio"],
        ["b", 2500, 1500, "stdio"],
        ["c", 10_000, 60_000, "http"],
      ],
    );
    assert.deepEqual(c.warnings, ['config.toml [mcp_servers.b]: "http_headers" is for HTTP servers (url); ignored']);
    assert.deepEqual(
      c.invalid.map((i) => i.name),
      ["d", "e"],
    );
    assert.match(c.invalid[0]!.message, /\[mcp_servers\.d\]: url cannot be given with "command"/);
  });

  test("environment and headers: env_vars pass through, env wins; a bearer token from its variable; a missing one says what to export", () => {
    assert.deepEqual(stdioEnv({ env: { A: "1" }, envVars: ["A", "B", "UNSET"] }, { A: "from-env", B: "b" }), {
      A: "1",
      B: "b",
    });
    const launch = {
      type: "http" as const,
      url: "http://h/mcp",
      headers: { X: "1" },
      envHeaders: { "X-Key": "KEY", "X-No": "UNSET" },
      bearerTokenEnvVar: "TOK",
    };
    assert.deepEqual(httpHeaders("s", launch, { KEY: "k", TOK: "t" }), {
      ok: { X: "1", "X-Key": "k", Authorization: "Bearer t" },
    });
    const missing = httpHeaders("s", launch, {});
    assert.ok("error" in missing && /names TOK, which is not set; export TOK=<token>/.test(missing.error.message));
  });

  test("tool names: the API's charset, at most 64 characters, distinct, never an executor tool's name", () => {
    const n = new ToolNamer(["read_file", "a__b"]);
    assert.equal(n.name("my.server", "get file/v2"), "my_server__get_file_v2");
    assert.equal(n.name("a", "b"), "a__b_2");
    const long1 = n.name("s", "x".repeat(100));
    const long2 = n.name("s", `${"x".repeat(99)}y`);
    for (const name of [long1, long2]) assert.match(name, /^[A-Za-z0-9_-]{1,64}$/);
    assert.notEqual(long1, long2);
    assert.equal(n.name("é", ""), "____");
  });

  test("schemas: $schema dropped, types told where they can be, boolean sub-schemas made objects; non-object or huge schemas become an open object with a note", () => {
    const p = toolParameters({
      $schema: "x",
      type: "object",
      properties: { a: { enum: ["x", "y"] }, b: { items: { type: "string" } }, c: true, d: { properties: {} } },
    });
    assert.deepEqual(p.parameters, {
      type: "object",
      properties: {
        a: { enum: ["x", "y"], type: "string" },
        b: { items: { type: "string" }, type: "array" },
        c: {},
        d: { properties: {}, type: "object" },
      },
    });
    assert.deepEqual(toolParameters({ type: "object" }).parameters, { type: "object", properties: {} });
    assert.match(toolParameters({ type: "string" }).note ?? "", /not an object schema/);
    assert.match(toolParameters(undefined).note ?? "", /no input schema/);
    const huge = toolParameters({
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 5000 }, (_, i) => [`p${i}`, { type: "string", description: "d".repeat(20) }]),
      ),
    });
    assert.match(huge.note ?? "", /too large/);
    assert.deepEqual(huge.parameters.properties, {});
  });

  test("results: text joined, media and resources summarised, structuredContent when there is no content, isError kept, output bounded", () => {
    const r = mcpResultText(
      {
        content: [
          { type: "text", text: "a" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          { type: "resource_link", uri: "file:///x", name: "x" },
          { type: "resource", resource: { uri: "mem://r", mimeType: "text/plain", text: "hello" } },
        ],
        isError: true,
      },
      1000,
    );
    assert.equal(
      r.text,
      "a\n[audio audio/wav, 3 bytes; not shown]\n[resource link file:///x (x)]\n[resource mem://r (text/plain): 5 characters of text]",
    );
    assert.equal(r.isError, true);
    assert.equal(mcpResultText({ content: [], structuredContent: { n: 1 } }, 1000).text, '{"n":1}');
    const cut = mcpResultText({ content: [{ type: "text", text: "y".repeat(100_000) }] }, 100);
    assert.ok(cut.text.length < 1000 && /tokens truncated/.test(cut.text));
  });

  test("the executor's line splitter: lines across chunks, \\r\\n, a last line without newline; a line over the limit is dropped with its edges", () => {
    const lines: string[] = [];
    const dropped: Array<[number, string]> = [];
    const s = new LineSplitter(
      10,
      (l) => lines.push(l),
      (bytes, edges) => dropped.push([bytes, edges]),
    );
    s.push(Buffer.from('{"a":1}\r\n{"b"'));
    s.push(Buffer.from(":2}\n\n0123456789ABCDEF\nlast"));
    s.end();
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}', "last"]);
    assert.equal(dropped.length, 1);
    assert.equal(dropped[0]![0], 16);
    assert.match(dropped[0]![1], /^0123456789ABCDEF…0123456789ABCDEF$/);
  });

  test("manifest: relative command paths and cwd resolve against the root; bare commands stay; broken and HTTP entries are skipped by name", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-manifest-"));
    try {
      assert.deepEqual(await readMcpManifest(root), {
        found: false,
        path: path.join(root, ".mcp.json"),
        servers: [],
        warnings: [],
      });
      mkdirSync(path.join(root, "sub"));
      writeFileSync(
        path.join(root, ".mcp.json"),
        JSON.stringify({
          mcpServers: {
            a: { command: "./bin/a", cwd: "sub" },
            b: { command: "node", args: ["s.js"], env: { K: "v" } },
            c: { command: 3 },
            d: { type: "http", url: "http://x" },
          },
        }),
      );
      const m = await readMcpManifest(root);
      assert.deepEqual(m.servers, [
        { name: "a", command: path.join(root, "bin/a"), args: [], env: {}, cwd: path.join(root, "sub") },
        { name: "b", command: "node", args: ["s.js"], env: { K: "v" }, cwd: root },
      ]);
      assert.equal(m.warnings.length, 2);
      assert.match(m.warnings[0]!, /server "c" skipped: command must be a string/);
      assert.match(m.warnings[1]!, /server "d" skipped: only stdio servers/);
      writeFileSync(path.join(root, ".mcp.json"), "{ not json");
      assert.match((await readMcpManifest(root)).warnings[0]!, /is not valid JSON/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
