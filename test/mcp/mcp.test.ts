/**
 * MCP servers in a session, with real processes: the SDK-written fixture server
 * (test/support/mcp-fixture-server.ts) on stdio, a session against the fake model server.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { parseConfig } from "../../src/config/config.ts";
import type { SessionEvent } from "../../src/contracts/events.ts";
import { approverSaying, type Harness, harness, inputOf } from "../session/run-support.ts";
import { isAlive } from "../support/executor.ts";
import { reply } from "../support/fake-model-server.ts";
import { fixtureToml } from "../support/mcp.ts";
import { waitFor } from "../support/wait.ts";

/** config.toml text as a user would have it, parsed as relay parses it. */
function mcpConfig(h: Harness, toml: string, over: Record<string, unknown> = {}) {
  const parsed = parseConfig(toml, "config.toml");
  assert.ok("ok" in parsed, JSON.stringify(parsed));
  return h.config({ mcp_servers: parsed.ok.config.mcp_servers, ...over });
}

/** The output the model got for `callId`. */
function outputFor(h: Harness, callId: string): string {
  for (const r of h.server.requests) {
    const out = inputOf(r.body).find((i) => i.type === "function_call_output" && i.call_id === callId);
    if (out) return out.output as string;
  }
  assert.fail(`no output for ${callId} reached the model`);
}

const warnings = (events: SessionEvent[]) =>
  events.filter((e) => e.type === "warning").map((e) => (e as { message: string }).message);

describe("MCP servers in a session", () => {
  test("relay run calls srv__echo and the model receives the output; servers are stopped at the end", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply().toolCall("srv__echo", { text: "hello mcp" }, { callId: "c1" }).toolCall("srv__pid", {}, { callId: "c2" }),
      reply().toolCall("srv__image", {}, { callId: "c3" }).toolCall("srv__fail", {}, { callId: "c4" }),
      reply().text("done"),
    );
    const r = await h.run({ prompt: "use the tools", config: mcpConfig(h, fixtureToml("srv")) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.finalMessage, "done");
    const tools = h.server.requests[0]!.body.tools as Array<{
      name: string;
      parameters: Record<string, unknown>;
      description: string;
    }>;
    const echo = tools.find((t) => t.name === "srv__echo");
    assert.ok(echo, tools.map((t) => t.name).join(", "));
    assert.equal(echo.parameters.type, "object");
    assert.deepEqual(Object.keys(echo.parameters.properties as object), ["text"]);
    assert.ok(!("$schema" in echo.parameters));
    assert.match(echo.description, /^Echoes its text back/);
    assert.equal(outputFor(h, "c1"), "echo: hello mcp");
    assert.match(outputFor(h, "c3"), /^here is a picture\n\[image image\/png, \d+ bytes; not shown\]$/);
    assert.match(outputFor(h, "c4"), /reported an error:\nthe fixture failed on purpose/);
    const failed = h.events.find((e) => e.type === "tool_result" && e.call_id === "c4");
    assert.equal(failed?.type === "tool_result" && failed.success, false);
    assert.ok(h.events.some((e) => e.type === "mcp_server" && e.server === "srv" && e.state === "ready"));
    // The session closed its servers: the fixture's process is gone.
    const pid = Number(outputFor(h, "c2"));
    assert.ok(pid > 0);
    await waitFor(() => !isAlive(pid), `MCP server pid ${pid} to be gone`);
  });

  test("closing a config server also ends what it started, even a process in a session of its own", async () => {
    await using h = await harness();
    h.server.enqueue(reply().toolCall("srv__spawn_child", {}, { callId: "child" }), reply().text("done"));
    const r = await h.run({ prompt: "start it", config: mcpConfig(h, fixtureToml("srv")) });
    assert.ok("ok" in r, JSON.stringify(r));
    const pid = Number(outputFor(h, "child"));
    assert.ok(pid > 0, outputFor(h, "child"));
    await waitFor(() => !isAlive(pid), `the server's detached child ${pid} to be gone`);
  });

  test("untrusted: a read-only MCP tool runs without asking, a write-capable one asks (refused without a terminal)", async () => {
    await using h = await harness();
    const note = path.join(h.workspace, "note.txt");
    h.server.enqueue(
      reply()
        .toolCall("srv__echo", { text: "ro" }, { callId: "ro" })
        .toolCall("srv__write_note", { path: note, note: "hi" }, { callId: "w" }),
      reply().text("ok"),
    );
    const r = await h.run({ prompt: "p", config: mcpConfig(h, fixtureToml("srv"), { approval_policy: "untrusted" }) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(outputFor(h, "ro"), "echo: ro");
    assert.match(
      outputFor(h, "w"),
      /^srv__write_note was not called: this needs the user's approval \(approval policy untrusted\).*annotations\.readOnlyHint/s,
    );
    assert.ok(!existsSync(note), "the write-capable tool did not run");
  });

  test("untrusted: the user is asked for the write-capable tool only, and an approval runs it", async () => {
    await using h = await harness();
    const note = path.join(h.workspace, "note.txt");
    const asked: string[] = [];
    h.server.enqueue(
      reply()
        .toolCall("srv__echo", { text: "ro" }, { callId: "ro" })
        .toolCall("srv__write_note", { path: note, note: "hi" }, { callId: "w" }),
      reply().text("ok"),
    );
    const r = await h.run({
      prompt: "p",
      config: mcpConfig(h, fixtureToml("srv"), { approval_policy: "untrusted" }),
      approver: approverSaying("approved", asked),
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.deepEqual(asked, ["mcp:srv__write_note"]);
    assert.match(outputFor(h, "w"), /^wrote 2 characters/);
    assert.equal(readFileSync(note, "utf8"), "hi");
  });

  test("a server that dies mid-session: the call is told how (exit code, stderr tail), the server restarts and the next call works", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply().toolCall("srv__pid", {}, { callId: "p1" }),
      reply().toolCall("srv__crash", {}, { callId: "crash" }),
      reply().toolCall("srv__echo", { text: "back" }, { callId: "after" }).toolCall("srv__pid", {}, { callId: "p2" }),
      reply().text("recovered"),
    );
    const r = await h.run({ prompt: "p", config: mcpConfig(h, fixtureToml("srv")) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.match(
      outputFor(h, "crash"),
      /^MCP server srv exited \(code 3\): fixture srv ready\nfixture: crashing on purpose; restarting$/,
    );
    assert.equal(outputFor(h, "after"), "echo: back");
    assert.notEqual(outputFor(h, "p1"), outputFor(h, "p2"), "a new process answers");
    const states = h.events.filter((e) => e.type === "mcp_server").map((e) => (e as { state: string }).state);
    assert.deepEqual(states, ["starting", "ready", "exited", "restarting", "ready"]);
    assert.ok(warnings(h.events).some((w) => w.includes("exited (code 3)")));
    for (const id of ["p1", "p2"]) {
      const pid = Number(outputFor(h, id));
      await waitFor(() => !isAlive(pid), `MCP server pid ${pid} to be gone`);
    }
  });

  test("a server that cannot start gives a warning with its stderr tail; the session goes on with the others", async () => {
    await using h = await harness();
    h.server.enqueue(reply().toolCall("good__echo", { text: "x" }, { callId: "c" }), reply().text("ok"));
    const r = await h.run({
      prompt: "p",
      config: mcpConfig(h, fixtureToml("bad", ["--fail-at-start"]) + fixtureToml("good")),
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(outputFor(h, "c"), "echo: x");
    const w = warnings(h.events).find((m) => m.includes("MCP server bad"));
    assert.match(
      w ?? "",
      /MCP server bad exited during start-up \(code 4\): fixture: cannot open its database: no such file \/nonexistent\/db; the session goes on without it/,
    );
    const names = (h.server.requests[0]!.body.tools as Array<{ name: string }>).map((t) => t.name);
    assert.ok(!names.some((n) => n.startsWith("bad__")) && names.includes("good__echo"));
  });

  test("a Codex config.toml [mcp_servers] block pasted unchanged works (unknown keys are warnings, disabled servers stay off)", async () => {
    await using h = await harness();
    const toml = [
      'model = "gpt-5-codex"',
      "",
      fixtureToml(
        "docs",
        [],
        [
          "startup_timeout_sec = 20",
          "tool_timeout_sec = 30.5",
          'env = { "FIXTURE_MODE" = "codex" }',
          'env_vars = ["HOME"]',
          'enabled_tools = ["echo", "pid"]',
          'disabled_tools = ["pid"]',
          "experimental_new_key = true",
        ],
      ),
      "[mcp_servers.off]",
      'command = "does-not-exist"',
      "enabled = false",
      "",
    ].join("\n");
    h.server.enqueue(reply().toolCall("docs__echo", { text: "codex" }, { callId: "c" }), reply().text("ok"));
    const r = await h.run({ prompt: "p", config: mcpConfig(h, toml) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(outputFor(h, "c"), "echo: codex");
    const names = (h.server.requests[0]!.body.tools as Array<{ name: string }>)
      .map((t) => t.name)
      .filter((n) => n.includes("__"));
    assert.deepEqual(names, ["docs__echo"], "enabled_tools then disabled_tools");
    assert.deepEqual(warnings(h.events), [
      'config.toml [mcp_servers.docs]: unknown key "experimental_new_key" ignored',
    ]);
  });

  test("a broken server entry is a clear error naming the server and key; the other servers still start", async () => {
    await using h = await harness();
    const toml =
      fixtureToml("good") +
      '[mcp_servers.broken]\ncommand = "x"\nargs = "not-a-list"\n\n[mcp_servers.neither]\nenv = { A = "b" }\n';
    h.server.enqueue(reply().toolCall("good__echo", { text: "still" }, { callId: "c" }), reply().text("ok"));
    const r = await h.run({ prompt: "p", config: mcpConfig(h, toml) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(outputFor(h, "c"), "echo: still");
    const w = warnings(h.events);
    assert.ok(
      w.includes(
        'config.toml [mcp_servers.broken]: args must be an array (got "not-a-list"); this server is skipped, the others start',
      ),
      w.join("\n"),
    );
    assert.ok(
      w.some((m) =>
        m.startsWith('config.toml [mcp_servers.neither]: command needs "command" (a stdio server) or "url"'),
      ),
      w.join("\n"),
    );
  });

  test("hostile server output: malformed stdout lines and a huge result do not break the session", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply().toolCall("srv__garbage", {}, { callId: "g" }),
      reply().toolCall("srv__big", { n: 3_000_000 }, { callId: "big" }),
      reply().toolCall("srv__echo", { text: "alive" }, { callId: "e" }),
      reply().text("ok"),
    );
    const r = await h.run({
      prompt: "p",
      config: mcpConfig(h, fixtureToml("srv"), { exec: { max_output_tokens: 1000, yield_time_ms: 10_000 } }),
    });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(outputFor(h, "g"), "still here");
    const big = outputFor(h, "big");
    assert.ok(big.length < 6000, `cut to the output budget (${big.length} characters)`);
    assert.match(big, /tokens truncated…x*tail$/);
    assert.equal(outputFor(h, "e"), "echo: alive");
  });

  test("time limits: a server stuck in start-up is left out (startup_timeout_sec); a call that never ends fails (tool_timeout_sec) and the server goes on", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply().toolCall("srv__hang", {}, { callId: "hang" }),
      reply().toolCall("srv__echo", { text: "next" }, { callId: "next" }),
      reply().text("ok"),
    );
    const toml =
      fixtureToml("stuck", ["--hang-at-start"], ["startup_timeout_sec = 0.3"]) +
      fixtureToml("srv", [], ["tool_timeout_sec = 0.3"]);
    const r = await h.run({ prompt: "p", config: mcpConfig(h, toml) });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.ok(
      warnings(h.events).includes(
        "MCP server stuck did not finish starting within 0.3 s (startup_timeout_sec); raise it in [mcp_servers.stuck] if the server is slow to start; the session goes on without it",
      ),
      warnings(h.events).join("\n"),
    );
    assert.equal(
      outputFor(h, "hang"),
      "MCP tool hang of server srv did not answer within 0.3 s (tool_timeout_sec); the server may still be working on it",
    );
    assert.equal(outputFor(h, "next"), "echo: next");
  });
});
