import assert from "node:assert/strict";
import { copyFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { userMessage } from "../../src/model/items.ts";
import { findRollout } from "../../src/rollout/find.ts";
import { readRollout, reconstructHistory } from "../../src/rollout/reader.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { must, withHome } from "./support.ts";

const FIXTURE = path.join(REPO_ROOT, "test/support/fixtures/codex-rollout.jsonl");

describe("a Codex-written rollout", () => {
  test("reads back: meta with extra keys, turn context, items, events, compaction", async () => {
    const r = must(await readRollout(FIXTURE));
    assert.deepEqual(r.warnings, []);
    assert.equal(r.meta.id, "01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90");
    assert.equal(r.meta.originator, "codex_cli_rs");
    assert.equal(r.meta.source, "cli");
    assert.equal(r.meta.model_provider, "openai");
    assert.equal(r.meta.base_instructions?.text, "You are a coding agent working in the user's repository.");
    assert.equal(r.meta.git?.branch, "main");
    assert.equal(r.meta.history_mode, "full", "unknown meta keys are kept");
    assert.equal(r.meta.instructions, null);

    assert.equal(r.lines.length, 17);
    assert.deepEqual([...new Set(r.lines.map((l) => l.type))].sort(), [
      "compacted",
      "event_msg",
      "response_item",
      "session_meta",
      "turn_context",
      "world_state",
    ]);
    const tokenCount = r.lines.find(
      (l) => l.type === "event_msg" && (l.payload as { type: string }).type === "token_count",
    );
    assert.equal((tokenCount!.payload as { info: { model_context_window: number } }).info.model_context_window, 272000);

    assert.equal(r.lastTurnContext?.turn_id, "turn-2");
    assert.equal(r.lastTurnContext?.model, "gpt-5-codex");
    assert.deepEqual((r.lastTurnContext!.sandbox_policy as { mode: string }).mode, "workspace-write");

    // The compaction's replacement history (minus the legacy ghost snapshot), then the new turn.
    assert.deepEqual(
      r.items.map((i) => [i.type, (i as { role?: string }).role]),
      [
        ["message", "user"],
        ["message", "user"],
        ["message", "user"],
      ],
    );
    assert.match(JSON.stringify(r.items[1]), /Handoff summary/);
    assert.deepEqual(r.items[2], userMessage("Now add a docstring."));

    const before = r.lines.slice(0, 14);
    const pre = reconstructHistory(before);
    assert.deepEqual(
      pre.map((i) => i.type),
      ["message", "message", "reasoning", "function_call", "function_call_output", "message"],
      "before the compaction: every item in order, ghost snapshot dropped",
    );
    assert.equal((pre[3] as { call_id: string }).call_id, "call_Qk2v8TnA");
    assert.equal((pre[2] as { encrypted_content: string }).encrypted_content, "gAAAAABo0x-fixture-opaque-blob");
  });

  test("can be resumed by Relay, which appends in the same format", async () => {
    await withHome(async (home) => {
      const copy = path.join(home, "codex.jsonl");
      await copyFile(FIXTURE, copy);
      const found = must(await findRollout(home, copy));
      assert.equal(found.id, "01997a3c-5e21-7c4b-9f0e-2b8d4a6c1e90");
      const w = must(await RolloutWriter.resume(copy));
      must(await w.appendItems([userMessage("from relay")]));
      must(await w.close());
      const r = must(await readRollout(copy));
      assert.deepEqual(r.warnings, []);
      assert.deepEqual(r.items.at(-1), userMessage("from relay"));
      assert.equal(r.items.length, 4);
    });
  });
});
