/**
 * MCP stdio servers declared by a capability root's `.mcp.json`, run on the executor host: the
 * executor is started over a pipe, as `ssh host relay executor` would be (`--executor`), and the
 * SDK Client talks to the server through it. Also: code mode sees MCP tools as tools.*.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { capabilityRoot } from "../../src/config/capability-root.ts";
import { parseConfig } from "../../src/config/config.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { type Harness, harness, inputOf } from "../session/run-support.ts";
import { isAlive } from "../support/executor.ts";
import { reply } from "../support/fake-model-server.ts";
import { bunPath, fixtureToml, MCP_FIXTURE } from "../support/mcp.ts";
import { relayArgv } from "../support/self.ts";
import { waitFor } from "../support/wait.ts";

function outputFor(h: Harness, callId: string): string {
  for (const r of h.server.requests) {
    for (const i of inputOf(r.body))
      if ((i.type === "function_call_output" || i.type === "custom_tool_call_output") && i.call_id === callId)
        return i.output as string;
  }
  assert.fail(`no output for ${callId} reached the model`);
}

/** A capability root whose `.mcp.json` starts the fixture through a script named by a relative path, in a relative cwd. */
function rootWithManifest(): { root: string; [Symbol.dispose](): void } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "relay-mcp-root-")));
  mkdirSync(path.join(root, "bin"));
  mkdirSync(path.join(root, "work"));
  const script = path.join(root, "bin/start-fixture");
  writeFileSync(script, `#!/bin/sh\nexec ${JSON.stringify(bunPath())} ${JSON.stringify(MCP_FIXTURE)} "$@"\n`);
  chmodSync(script, 0o755);
  const manifest = {
    mcpServers: {
      tools: {
        command: "bin/start-fixture",
        args: ["--name", "tools"],
        env: { FIXTURE_MODE: "from-manifest" },
        cwd: "work",
      },
      web: { type: "http", url: "http://127.0.0.1:1/mcp" },
    },
  };
  writeFileSync(path.join(root, ".mcp.json"), JSON.stringify(manifest));
  return { root, [Symbol.dispose]: () => rmSync(root, { recursive: true, force: true }) };
}

/** `relay executor` started over a pipe by its command line, named "remote" by the session. */
const executorCommand = () => joinCommandLine([...relayArgv(), "executor"]);

describe("MCP servers on the executor host", () => {
  test("a root's .mcp.json server runs on an executor started over a pipe: calls, cwd and env resolved there, death and restart, stopped at the end", async () => {
    await using h = await harness();
    using r = rootWithManifest();
    h.server.enqueue(
      reply().toolCall("tools__where", {}, { callId: "where" }).toolCall("tools__pid", {}, { callId: "p1" }),
      reply()
        .toolCall("tools__garbage", {}, { callId: "g" })
        .toolCall("tools__big", { n: 2_000_000 }, { callId: "big" }),
      reply().toolCall("tools__big", { n: 5_000_000 }, { callId: "huge" }),
      reply().toolCall("tools__crash", {}, { callId: "crash" }),
      reply()
        .toolCall("tools__echo", { text: "via executor" }, { callId: "echo" })
        .toolCall("tools__pid", {}, { callId: "p2" }),
      reply().text("done"),
    );
    const result = await h.run({
      prompt: "p",
      executorCommand: executorCommand(),
      capabilityRoots: [capabilityRoot("remote", r.root)],
    });
    assert.ok("ok" in result, JSON.stringify(result));
    assert.deepEqual(JSON.parse(outputFor(h, "where")), { cwd: path.join(r.root, "work"), mode: "from-manifest" });
    assert.equal(outputFor(h, "g"), "still here");
    assert.match(outputFor(h, "big"), /tokens truncated…x*tail$/);
    // Over the executor's 4 MiB per message: that answer fails at once, the server stays up.
    assert.match(
      outputFor(h, "huge"),
      /^MCP server tools could not run big: MCP error -32603: the server's answer was dropped: a 5000\d{3}-byte message is over the executor's 4194304-byte limit for one MCP message; dropped$/,
    );
    assert.match(
      outputFor(h, "crash"),
      /^MCP server tools exited \(code 3\): fixture tools ready\nfixture: crashing on purpose; restarting$/,
    );
    assert.equal(outputFor(h, "echo"), "echo: via executor");
    const warnings = h.events.filter((e) => e.type === "warning").map((e) => (e as { message: string }).message);
    assert.ok(
      warnings.some((w) => w.includes('server "web" skipped: only stdio servers')),
      warnings.join("\n"),
    );
    for (const id of ["p1", "p2"]) {
      const pid = Number(outputFor(h, id));
      assert.ok(pid > 0);
      await waitFor(() => !isAlive(pid), `MCP server pid ${pid} on the executor to be gone`);
    }
  });

  test("a root on another environment is not read locally; a root without .mcp.json starts nothing", async () => {
    await using h = await harness();
    using r = rootWithManifest();
    const empty = realpathSync(mkdtempSync(path.join(os.tmpdir(), "relay-mcp-empty-")));
    try {
      h.server.enqueue(reply().text("ok"));
      const result = await h.run({
        prompt: "p",
        capabilityRoots: [capabilityRoot("elsewhere", r.root), capabilityRoot("local", empty)],
      });
      assert.ok("ok" in result, JSON.stringify(result));
      const names = (h.server.requests[0]!.body.tools as Array<{ name: string }>).map((t) => t.name);
      assert.ok(!names.some((n) => n.includes("__")), names.join(", "));
      assert.ok(!h.events.some((e) => e.type === "mcp_server"));
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  test("code mode sees MCP tools as tools.*", async () => {
    await using h = await harness();
    const parsed = parseConfig(fixtureToml("srv"), "config.toml");
    assert.ok("ok" in parsed);
    h.server.enqueue(
      reply().customToolCall(
        "exec",
        'text(ALL_TOOLS.map((t) => t.name).filter((n) => n.startsWith("srv__")).join(",")); text(await tools.srv__echo({ text: "from js" }));',
        { callId: "js" },
      ),
      reply().text("ok"),
    );
    const result = await h.run({
      prompt: "p",
      codeMode: true,
      config: h.config({ mcp_servers: parsed.ok.config.mcp_servers }),
    });
    assert.ok("ok" in result, JSON.stringify(result));
    const out = outputFor(h, "js");
    assert.match(out, /Script completed/);
    assert.match(out, /srv__echo,/);
    assert.match(out, /echo: from js/);
  });
});
