/**
 * A tiny MCP server for tests, written with the SDK's server side, on stdio:
 *   bun test/support/mcp-fixture-server.ts [--fail-at-start | --hang-at-start] [--name NAME]
 * Tools: echo (read-only), pid (read-only), where (cwd and $FIXTURE_MODE), write_note (writes a file: not read-only), fail
 * (answers isError), hang (never answers), crash (writes to stderr and exits 3 without answering), big (N characters),
 * image (an image content item), garbage (writes malformed lines to stdout, then answers), spawn_child (starts
 * `sleep` in a session of its own, as a daemon would, and answers its pid).
 * Always run under Bun, whatever runs the tests (test/support/mcp.ts mcpFixtureCommand), so it
 * needs no build step.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

async function serve(argv: string[]): Promise<void> {
  const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const { z } = await import("zod");
  const name = argv.includes("--name") ? argv[argv.indexOf("--name") + 1]! : "fixture";
  if (argv.includes("--fail-at-start")) {
    process.stderr.write("fixture: cannot open its database: no such file /nonexistent/db\n");
    process.exit(4);
  }
  if (argv.includes("--hang-at-start")) {
    // Alive, reading stdin, never answering: a server stuck in its start-up.
    process.stdin.resume();
    return;
  }
  const server = new McpServer({ name, version: "1.0.0" });
  const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
  server.registerTool(
    "echo",
    {
      description: "Echoes its text back.\nSecond line of the description.",
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ text: t }) => text(`echo: ${t}`),
  );
  server.registerTool(
    "pid",
    { description: "The server's process id.", annotations: { readOnlyHint: true } },
    async () => text(String(process.pid)),
  );
  server.registerTool(
    "where",
    { description: "Its cwd and FIXTURE_MODE.", annotations: { readOnlyHint: true } },
    async () => text(JSON.stringify({ cwd: process.cwd(), mode: process.env.FIXTURE_MODE ?? null })),
  );
  server.registerTool(
    "write_note",
    { description: "Writes a note to a file.", inputSchema: { path: z.string(), note: z.string() } },
    async ({ path: p, note }) => {
      writeFileSync(p, note);
      return text(`wrote ${note.length} characters to ${p}`);
    },
  );
  server.registerTool("fail", { description: "Always fails.", annotations: { readOnlyHint: true } }, async () => ({
    ...text("the fixture failed on purpose"),
    isError: true,
  }));
  server.registerTool("crash", { description: "Exits the server." }, async () => {
    process.stderr.write("fixture: crashing on purpose\n");
    process.exit(3);
  });
  server.registerTool(
    "big",
    { description: "Returns n characters.", inputSchema: { n: z.number().int() }, annotations: { readOnlyHint: true } },
    async ({ n }) => text(`${"x".repeat(n - 4)}tail`),
  );
  server.registerTool(
    "hang",
    { description: "Never answers.", annotations: { readOnlyHint: true } },
    () => new Promise<never>(() => {}),
  );
  server.registerTool("image", { description: "Returns an image.", annotations: { readOnlyHint: true } }, async () => ({
    content: [
      { type: "text" as const, text: "here is a picture" },
      { type: "image" as const, data: Buffer.from("not really a png").toString("base64"), mimeType: "image/png" },
    ],
  }));
  server.registerTool(
    "garbage",
    { description: "Writes malformed lines to stdout, then answers.", annotations: { readOnlyHint: true } },
    async () => {
      process.stdout.write('this is not json\n{"jsonrpc":"2.0","id":\n[1,2,3]\n{"jsonrpc":"2.0","method":42}\n');
      return text("still here");
    },
  );
  server.registerTool(
    "spawn_child",
    { description: "Starts a detached sleep; answers its pid.", annotations: { readOnlyHint: true } },
    async () => {
      const child = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
      child.unref();
      return text(String(child.pid));
    },
  );
  await server.connect(new StdioServerTransport());
  process.stderr.write(`fixture ${name} ready\n`);
}

await serve(process.argv.slice(2));
