/**
 * Relay's rollouts carry what `codex resume` needs: checked with a validator written from the
 * Codex line format, which in turn is checked against lines real Codex versions write.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { codexProviderId, codexSandboxPolicy, wireApiOf } from "../../src/rollout/codex-compat.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { codexProblems } from "../support/codex-lines.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { harness } from "./run-support.ts";

const fixture = (name: string) => readFileSync(path.join(REPO_ROOT, "test/support/fixtures", name), "utf8");

describe("Relay rollouts in the line format Codex reads", () => {
  test("the validator passes what Codex 0.171 writes (legacy and paginated files) and names what it refuses", () => {
    assert.deepEqual(codexProblems(fixture("codex-0.171-legacy.jsonl")), []);
    assert.deepEqual(codexProblems(fixture("codex-0.171-paginated.jsonl")), []);
    const relayBefore = fixture("codex-0.171-legacy.jsonl")
      .replace('"model_provider": "openai"', '"model_provider": "openai-responses"')
      .replace('"sandbox_policy": {"type": "read-only"}', '"sandbox_policy": {"mode": "read-only"}');
    assert.notEqual(relayBefore, fixture("codex-0.171-legacy.jsonl"));
    const problems = codexProblems(relayBefore).join("\n");
    assert.match(problems, /session_meta: model_provider/);
    assert.match(problems, /turn_context: sandbox_policy\.type/);
    const torn =
      fixture("codex-0.171-paginated.jsonl").trimEnd() +
      '\n{"timestamp":"2026-12-03T11:26:37.000Z","type":"event_msg","payload":{"type":"agent_message","message":"x"}}\n';
    assert.match(codexProblems(torn).join("\n"), /line 7: a paginated file needs ordinal 6, has undefined/);
  });

  test("a Relay session with a tool call, resumed for a second turn, passes it", async () => {
    await using h = await harness();
    h.server.enqueue(reply().toolCall("exec_command", { cmd: "echo hi" }), reply().text("done"), reply().text("again"));
    const first = await h.run({ prompt: "say hi" });
    assert.ok("ok" in first, JSON.stringify(first));
    const second = await h.run({ resume: first.ok.rolloutPath, prompt: "once more" });
    assert.ok("ok" in second);
    const text = readFileSync(first.ok.rolloutPath, "utf8");
    assert.deepEqual(codexProblems(text), []);
    const r = await readRollout(first.ok.rolloutPath);
    assert.ok("ok" in r);
    assert.equal(r.ok.meta.model_provider, "openai");
    assert.equal(
      (r.ok.meta as { wire_api?: string }).wire_api,
      "responses",
      "the API Relay spoke, in a field of its own",
    );
    const contexts = r.ok.lines
      .filter((l) => l.type === "turn_context")
      .map((l) => l.payload as { turn_id: string; model_provider: string });
    assert.equal(contexts.length, 2);
    assert.notEqual(contexts[0]!.turn_id, contexts[1]!.turn_id, "each turn has its own id");
    assert.equal(contexts[1]!.model_provider, "openai-responses", "Relay's own resume setting is still there");
  });

  test("codex_provider_id is the provider id a session records, for a Codex with a provider of its own", async () => {
    await using h = await harness();
    h.server.enqueue(reply().text("ok"));
    const run = await h.run({ prompt: "hi", config: h.config({ codex_provider_id: "azure" }) });
    assert.ok("ok" in run, JSON.stringify(run));
    const r = await readRollout(run.ok.rolloutPath);
    assert.ok("ok" in r);
    assert.equal(r.ok.meta.model_provider, "azure");
    const text = readFileSync(run.ok.rolloutPath, "utf8");
    assert.deepEqual(codexProblems(text, ["openai", "azure"]), [], "a Codex with [model_providers.azure] takes it");
    assert.match(
      codexProblems(text).join("\n"),
      /model_provider "azure" is not a provider Codex has configured/,
      "a Codex without it refuses it",
    );
  });

  test("provider ids, wire APIs and sandbox policies as Codex names them", () => {
    assert.equal(codexProviderId(undefined), "openai");
    assert.equal(codexProviderId("https://api.openai.com/v1"), "openai");
    assert.equal(codexProviderId("http://localhost:11434/v1"), "ollama");
    assert.equal(codexProviderId("http://127.0.0.1:1234/v1"), "lmstudio");
    assert.equal(codexProviderId("not a url"), "openai");
    assert.equal(wireApiOf("openai-chat"), "chat");
    assert.equal(wireApiOf("openai-responses"), "responses");
    assert.deepEqual(codexSandboxPolicy("read-only", { mechanism: "landlock" }), {
      type: "read-only",
      mechanism: "landlock",
    });
    assert.deepEqual(codexSandboxPolicy("workspace-write"), { type: "workspace-write", network_access: false });
  });
});
