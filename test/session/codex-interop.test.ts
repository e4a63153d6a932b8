/**
 * Resuming a Codex session: Relay forks it (the Codex file stays byte-for-byte, so Codex can
 * still resume it), and what goes to the model is only what the API takes, on the Responses
 * API and on Chat Completions.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { readRollout } from "../../src/rollout/reader.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { harness } from "./run-support.ts";

const FIXTURE = path.join(REPO_ROOT, "test/support/fixtures/codex-rollout.jsonl");

/** The fixture plus what newer Codex builds write: a Codex-only field, a local shell call and its output, a hosted tool's item. */
function codexSession(dir: string): string {
  const at = "2025-09-24T08:20:00.000Z";
  const line = (payload: unknown) => JSON.stringify({ timestamp: at, type: "response_item", payload });
  const extra = [
    line({
      type: "message",
      role: "assistant",
      content: [{ type: "output_text", text: "Checked.", annotations: [] }],
      end_turn: true,
      internal_chat_message_metadata_passthrough: { turn: 3 },
    }),
    line({
      type: "local_shell_call",
      id: "lsh_1",
      call_id: "call_shell_1",
      status: "completed",
      action: { type: "exec", command: ["bash", "-lc", "ls"] },
    }),
    line({ type: "function_call_output", call_id: "call_shell_1", output: "src\n" }),
    line({ type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "tally" } }),
  ];
  const file = path.join(dir, "rollout-2025-09-24T08-15-02-01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90.jsonl");
  writeFileSync(file, readFileSync(FIXTURE, "utf8").trimEnd() + "\n" + extra.join("\n") + "\n");
  return file;
}

const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

describe("resuming a Codex session", () => {
  for (const api of ["openai-responses", "openai-chat"] as const) {
    test(`forks it, leaves the Codex file as it was, and sends only what ${api} takes`, async () => {
      await using h = await harness();
      const source = codexSession(h.workspace);
      const before = {
        sha: sha(source),
        size: statSync(source).size,
        lines: readFileSync(source, "utf8").trim().split("\n").length,
      };
      h.server.enqueue(reply().text("Continuing."));
      const r = await h.run({ resume: source, prompt: "Go on.", config: h.config({ model_provider: api }) });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.equal(sha(source), before.sha, "the Codex file is byte-for-byte unchanged");
      assert.equal(statSync(source).size, before.size);
      assert.notEqual(r.ok.rolloutPath, source, "the conversation went on in a new rollout");
      const fork = await readRollout(r.ok.rolloutPath);
      assert.ok("ok" in fork);
      assert.equal(fork.ok.meta.originator, "relay");
      assert.equal(fork.ok.meta.forked_from_id, "01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90");
      assert.equal(fork.ok.meta.forked_from_path, source);
      assert.equal(fork.ok.meta.forked_from_lines, before.lines);
      assert.ok(
        h.events.some(
          (e) => e.type === "warning" && /was written by codex_cli_rs, not Relay: it stays as it is/.test(e.message),
        ),
      );
      assert.ok(
        h.events.some((e) => e.type === "session_started" && e.forked_from === "01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90"),
      );

      const body = JSON.stringify(h.server.requests[0]!.body);
      for (const codexOnly of [
        "internal_chat_message_metadata_passthrough",
        "end_turn",
        "web_search_call",
        "local_shell_call",
        "lsh_1",
      ])
        assert.ok(!body.includes(codexOnly), `${codexOnly} is not sent`);
      if (api === "openai-responses") {
        const input = h.server.requests[0]!.body.input as Array<Record<string, unknown>>;
        const shell = input.find((i) => i.call_id === "call_shell_1" && i.type === "function_call");
        assert.deepEqual(shell, {
          type: "function_call",
          name: "shell",
          arguments: JSON.stringify({ type: "exec", command: ["bash", "-lc", "ls"] }),
          call_id: "call_shell_1",
        });
        assert.ok(
          input.some((i) => i.type === "function_call_output" && i.call_id === "call_shell_1"),
          "its output still follows it",
        );
      } else {
        const messages = h.server.requests[0]!.body.messages as Array<{
          role: string;
          tool_calls?: Array<{ id: string; function: { name: string } }>;
          tool_call_id?: string;
        }>;
        const at = messages.findIndex((m) =>
          m.tool_calls?.some((c) => c.id === "call_shell_1" && c.function.name === "shell"),
        );
        assert.ok(at >= 0, "the shell call is an assistant tool call");
        assert.equal(messages[at + 1]?.tool_call_id, "call_shell_1", "and its output the tool message after it");
      }
    });
  }

  test("a Relay session is still resumed in place", async () => {
    await using h = await harness();
    h.server.enqueue(reply().text("one"), reply().text("two"));
    const first = await h.run({ prompt: "first" });
    assert.ok("ok" in first);
    const second = await h.run({ resume: first.ok.rolloutPath, prompt: "second" });
    assert.ok("ok" in second);
    assert.equal(second.ok.rolloutPath, first.ok.rolloutPath);
    assert.ok(!h.events.some((e) => e.type === "warning" && /not Relay/.test(e.message)));
  });
});
