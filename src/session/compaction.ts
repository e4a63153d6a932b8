/**
 * Auto-compaction: when the context nears the window, a summary turn replaces history. The new
 * history is: the project instructions (AGENTS.md) if the session had them, the user's earlier messages that fit a token budget, the summary, and the user's
 * latest request verbatim, last, so it is never lost. If the summary turn fails, the oldest tool
 * outputs are emptied instead, so the context never ends up empty.
 */
import type { ModelClient } from "../model/client.ts";
import { isContextMessage, isProjectDocMessage } from "../model/context-fragments.ts";
import { type MessageItem, messageText, type ResponseItem, userMessage } from "../model/items.ts";
import { BYTES_PER_TOKEN, estimateTokens } from "../util/truncate.ts";
import * as prompts from "./prompts.generated.ts";

/** The request of the summary turn: prompts/compact.md. */
export const COMPACT_PROMPT = prompts.COMPACT;

/** What the summary starts with in the new history: prompts/summary-prefix.md. */
export const SUMMARY_PREFIX = prompts.SUMMARY_PREFIX;

export const USER_MESSAGE_BUDGET_TOKENS = 20_000;

export function isSummaryMessage(item: ResponseItem): boolean {
  return (
    item.type === "message" &&
    (item as MessageItem).role === "user" &&
    messageText(item as MessageItem).startsWith(SUMMARY_PREFIX)
  );
}

/** What the user asked: not summaries, not injected context (AGENTS.md, skill bodies). */
function userMessages(history: ResponseItem[]): MessageItem[] {
  return history.filter(
    (i): i is MessageItem =>
      i.type === "message" && (i as MessageItem).role === "user" && !isSummaryMessage(i) && !isContextMessage(i),
  );
}

/** Earlier user messages, newest first within the budget, back in chronological order. */
export function keptUserMessages(
  history: ResponseItem[],
  budget = USER_MESSAGE_BUDGET_TOKENS,
): { earlier: MessageItem[]; latest?: MessageItem } {
  const all = userMessages(history);
  const latest = all.at(-1);
  const earlier: MessageItem[] = [];
  let left = budget - (latest ? estimateTokens(messageText(latest)) : 0);
  for (let i = all.length - 2; i >= 0 && left > 0; i--) {
    const text = messageText(all[i]!);
    const cost = estimateTokens(text);
    if (cost <= left) {
      earlier.unshift(all[i]!);
      left -= cost;
    } else {
      earlier.unshift(userMessage(`${text.slice(0, left * BYTES_PER_TOKEN)}\n[… message truncated by compaction …]`));
      break;
    }
  }
  return { earlier, latest };
}

/** `budget` bounds the earlier user messages kept; callers scale it to the context window. */
export function buildCompactedHistory(
  history: ResponseItem[],
  summary: string,
  budget = USER_MESSAGE_BUDGET_TOKENS,
): ResponseItem[] {
  const { earlier, latest } = keptUserMessages(history, budget);
  // The project instructions stay first, as at the start of the session.
  const context = history.filter(isProjectDocMessage).slice(-1);
  const out: ResponseItem[] = [
    ...context,
    ...earlier,
    userMessage(`${SUMMARY_PREFIX}\n\n${summary.trim() || "(no summary available)"}`),
  ];
  if (latest) out.push(latest);
  return out;
}

/** Fallback when the summary turn fails: keep every item, empty the older tool outputs. */
export function pruneToolOutputs(history: ResponseItem[], keepLast = 4): ResponseItem[] {
  const outputIdx = history.flatMap((it, i) =>
    it.type === "function_call_output" || it.type === "custom_tool_call_output" ? [i] : [],
  );
  const drop = new Set(outputIdx.slice(0, Math.max(0, outputIdx.length - keepLast)));
  return history.map((it, i) =>
    drop.has(i) ? { ...it, output: "[output removed by compaction to fit the context window]" } : it,
  );
}

/** Runs the summary turn; drops the oldest items and retries while the request itself is too big. */
export async function summarize(
  model: ModelClient,
  request: { model: string; instructions: string },
  history: ResponseItem[],
  signal?: AbortSignal,
): Promise<string> {
  let input = [...history];
  for (;;) {
    try {
      let text = "";
      for await (const e of model.stream(
        { ...request, input: [...input, userMessage(COMPACT_PROMPT)], tools: [], parallelToolCalls: false },
        signal,
      )) {
        if (e.type === "item" && e.item.type === "message" && (e.item as MessageItem).role === "assistant")
          text = messageText(e.item as MessageItem);
      }
      return text;
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "context_window" && input.length > 1) {
        input = input.slice(1);
        continue;
      }
      throw e;
    }
  }
}
