/** Which rollout items feed phase 1, and how they are serialized for the extractor. */
import { estimateTokens } from "../util/truncate.ts";
import { isContextFragment } from "../model/context-fragments.ts";
import type { ResponseItem } from "../model/items.ts";
import type { RolloutLine } from "../rollout/schema.ts";

const KEPT_TYPES = new Set([
  "message",
  "local_shell_call",
  "function_call",
  "function_call_output",
  "custom_tool_call",
  "custom_tool_call_output",
  "tool_search_call",
  "tool_search_output",
  "web_search_call",
]);

/** Memory-relevant items of a rollout, in order; developer messages and reasoning are dropped. */
export function memoryItems(lines: Iterable<RolloutLine>): ResponseItem[] {
  const out: ResponseItem[] = [];
  for (const line of lines) {
    if (line.type !== "response_item") continue;
    const item = line.payload as ResponseItem;
    if (!KEPT_TYPES.has(item.type)) continue;
    if (item.type === "message") {
      const msg = item as Extract<ResponseItem, { type: "message"; role: string }>;
      if (msg.role === "developer" || msg.role === "system") continue;
      if (msg.role === "user") {
        const content = msg.content.filter((c) => !("text" in c && c.type === "input_text" && isContextFragment(c.text)));
        if (!content.length) continue;
        out.push({ ...msg, content });
        continue;
      }
    }
    out.push(item);
  }
  return out;
}

/** Keeps the head and tail of `text` within `maxChars`, with a marker where the middle was cut. */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  const cut = text.slice(half, text.length - half);
  return `${text.slice(0, half)}\n…${estimateTokens(cut)} tokens truncated…\n${text.slice(text.length - half)}`;
}
