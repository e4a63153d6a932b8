/** `relay mcp list` and `relay run` with [mcp_servers], as real relay processes with the fixture server. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { McpListSchema } from "../../src/mcp/list.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { fixtureToml } from "../support/mcp.ts";
import { runRelayAsync } from "../support/self.ts";

function homeWith(config: string): { home: string; [Symbol.dispose](): void } {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-mcp-home-"));
  writeFileSync(path.join(home, "config.toml"), config);
  return { home, [Symbol.dispose]: () => rmSync(home, { recursive: true, force: true }) };
}

const relay = (home: string, args: string[]) =>
  runRelayAsync(args, { ...process.env, RELAY_HOME: home, NO_COLOR: "1" });

describe("relay mcp list", () => {
  test("--json: each server's state (ok with its tools, failed with the reason, disabled); exit 0 though one failed", async () => {
    using h = homeWith(
      fixtureToml("srv") +
        fixtureToml("bad", ["--fail-at-start"]) +
        '[mcp_servers.off]\ncommand = "nothing"\nenabled = false\n',
    );
    const r = await relay(h.home, ["mcp", "list", "--json"]);
    assert.equal(r.status, 0, r.stderr);
    const list = McpListSchema.parse(JSON.parse(r.stdout));
    assert.deepEqual(
      list.servers.map((s) => [s.name, s.state]),
      [
        ["bad", "failed"],
        ["off", "disabled"],
        ["srv", "ok"],
      ],
    );
    assert.match(list.servers[0]!.reason!, /exited during start-up \(code 4\): fixture: cannot open its database/);
    const tools = list.servers[2]!.tools;
    assert.deepEqual(
      tools.find((t) => t.name === "echo"),
      { name: "echo", model_name: "srv__echo", read_only: true, description: "Echoes its text back." },
    );
    assert.equal(tools.find((t) => t.name === "write_note")?.read_only, false);
  });

  test("human output; a broken entry is shown as invalid (naming server and key) and exits 2; bad flags exit 2", async () => {
    using h = homeWith(fixtureToml("srv") + '[mcp_servers.broken]\ncommand = "x"\nstartup_timeout_sec = "ten"\n');
    const r = await relay(h.home, ["mcp", "list"]);
    assert.equal(r.status, 2, r.stderr);
    assert.match(
      r.stdout,
      /^broken: invalid: .*config\.toml \[mcp_servers\.broken\]: startup_timeout_sec must be a number \(got "ten"\)/m,
    );
    assert.match(r.stdout, /^srv \(stdio\): ok · \d+ tools\n {2}srv__echo {2}read-only {2}Echoes its text back\.$/m);
    assert.equal((await relay(h.home, ["mcp", "list", "--frobnicate"])).status, 2);
  });

  test("a TOML syntax error in config.toml exits 2 with file and line", async () => {
    using h = homeWith("[mcp_servers.x\ncommand = 1\n");
    const r = await relay(h.home, ["mcp", "list"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /config\.toml:1:\d+: TOML syntax error/);
  });
});

describe("relay run with [mcp_servers]", () => {
  test("the CLI session calls the server's tool and the model gets the result", async () => {
    await using s = await harness();
    writeFileSync(path.join(s.home, "config.toml"), fixtureToml("srv"));
    s.server.enqueue(reply().toolCall("srv__echo", { text: "cli" }, { callId: "c" }), reply().text("done"));
    const r = await relay(s.home, [
      "run",
      "--base-url",
      s.server.baseUrl,
      "-m",
      "m",
      "-s",
      "danger-full-access",
      "-C",
      s.workspace,
      "--json",
      "go",
    ]);
    assert.equal(r.status, 0, r.stderr);
    const out = inputOf(s.server.requests[1]!.body).find((i) => i.type === "function_call_output" && i.call_id === "c");
    assert.equal(out?.output, "echo: cli");
  });
});
