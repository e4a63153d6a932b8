/** Which rollout items feed phase 1, and how they are serialized for the extractor. */

import { isContextFragment } from "../model/context-fragments.ts";
import type { ResponseItem } from "../model/items.ts";
import { visitRollout } from "../rollout/reader.ts";
import type { RolloutLine } from "../rollout/schema.ts";
import { ok, type Result } from "../util/result.ts";
import { estimateTokens } from "../util/truncate.ts";

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
    const item = memoryItem(line);
    if (item) out.push(item);
  }
  return out;
}

/** The item one rollout line contributes to `memoryItems`, if any (lines are judged one by one, so a rollout can be streamed). */
export function memoryItem(line: RolloutLine): ResponseItem | undefined {
  if (line.type !== "response_item") return undefined;
  const item = line.payload as ResponseItem;
  if (!KEPT_TYPES.has(item.type)) return undefined;
  if (item.type !== "message") return item;
  const msg = item as Extract<ResponseItem, { type: "message"; role: string }>;
  if (msg.role === "developer" || msg.role === "system") return undefined;
  if (msg.role !== "user") return item;
  const content = msg.content.filter((c) => !("text" in c && c.type === "input_text" && isContextFragment(c.text)));
  return content.length ? { ...msg, content } : undefined;
}

/**
 * `memoryItems` of the rollout at `file`, streamed: its lines are parsed and judged one at a time
 * and only the kept items stay in memory (never the file or its other lines). `source` gives the
 * file's bytes as a stream instead. The same errors as `readRollout`; `warnings` name each
 * skipped line (file and line number), the rest of the rollout is used.
 */
export async function readMemoryRollout(
  file: string,
  source?: AsyncIterable<Uint8Array>,
): Promise<Result<{ items: ResponseItem[]; warnings: string[] }>> {
  const items: ResponseItem[] = [];
  const r = await visitRollout(
    file,
    (line) => {
      const item = memoryItem(line);
      if (item) items.push(item);
    },
    source,
  );
  return "error" in r ? r : ok({ items, warnings: r.ok.warnings });
}

/** Keeps the head and tail of `text` within `maxChars`, with a marker where the middle was cut. */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const half = Math.floor(maxChars / 2);
  const cut = text.slice(half, text.length - half);
  return `${text.slice(0, half)}\n…${estimateTokens(cut)} tokens truncated…\n${text.slice(text.length - half)}`;
}

/** A whole part that is one injected block such as `<environment_context>...</environment_context>`. */
const TAGGED_BLOCK = /^<([A-Za-z_][\w-]*)>[\s\S]*<\/\1>$/;

/**
 * Whether kept `items` hold something a user (or a parent agent) asked: a user message with a
 * part that is not only an injected block (environment context, sub-agent notice). A rollout
 * without one has nothing to remember and is not sent to the extractor.
 */
export function hasUserTurn(items: readonly ResponseItem[]): boolean {
  return items.some((i) => {
    if (i.type !== "message") return false;
    const msg = i as Extract<ResponseItem, { type: "message"; role: string }>;
    if (msg.role !== "user") return false;
    return msg.content.some(
      (c) =>
        !("text" in c) || (typeof c.text === "string" && c.text.trim() !== "" && !TAGGED_BLOCK.test(c.text.trim())),
    );
  });
}
