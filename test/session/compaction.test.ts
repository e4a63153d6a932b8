import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assistantMessage,
  type MessageItem,
  messageText,
  type ResponseItem,
  userMessage,
} from "../../src/model/items.ts";
import {
  buildCompactedHistory,
  isSummaryMessage,
  keptUserMessages,
  pruneToolOutputs,
  SUMMARY_PREFIX,
} from "../../src/session/compaction.ts";

const text = (i: ResponseItem) => messageText(i as MessageItem);

describe("compaction", () => {
  test("the latest request is kept whole and last, even when it alone is over the budget", () => {
    const huge = "L".repeat(400);
    const history = [userMessage("old one"), assistantMessage("a"), userMessage(huge)];
    const out = buildCompactedHistory(history, "summary text", 10);
    assert.equal(text(out.at(-1)!), huge);
    assert.ok(isSummaryMessage(out.at(-2)!));
    assert.ok(text(out.at(-2)!).startsWith(SUMMARY_PREFIX));
    assert.ok(!out.some((i) => text(i) === "old one"), "no budget left for older messages");
  });

  test("older user messages are kept newest first within the budget; the first that does not fit is truncated", () => {
    const history = [
      userMessage("a".repeat(80)),
      userMessage("b".repeat(40)),
      userMessage("c".repeat(40)),
      userMessage("latest"),
    ];
    const { earlier, latest } = keptUserMessages(history, 2 + 10 + 10 + 5);
    assert.equal(text(latest!), "latest");
    assert.deepEqual(
      earlier.map((m) => text(m)[0]),
      ["a", "b", "c"],
    );
    assert.match(text(earlier[0]!), /^a{20}\n\[… message truncated by compaction …\]$/);
  });

  test("previous summaries are not carried as user messages", () => {
    const history = [userMessage(`${SUMMARY_PREFIX}\n\nold summary`), userMessage("real request")];
    const out = buildCompactedHistory(history, "new summary");
    assert.equal(out.filter((i) => text(i).includes("old summary")).length, 0);
    assert.equal(text(out.at(-1)!), "real request");
  });

  test("an empty summary still leaves a marker, and the fallback keeps every item", () => {
    const out = buildCompactedHistory([userMessage("x")], "   ");
    assert.match(text(out[0]!), /\(no summary available\)/);
    const calls: ResponseItem[] = Array.from({ length: 6 }, (_, i) => ({
      type: "function_call_output",
      call_id: `c${i}`,
      output: `out ${i}`,
    }));
    const pruned = pruneToolOutputs([userMessage("keep"), ...calls], 4);
    assert.equal(pruned.length, 7);
    assert.match((pruned[1] as { output: string }).output, /removed by compaction/);
    assert.equal((pruned[6] as { output: string }).output, "out 5");
  });
});
