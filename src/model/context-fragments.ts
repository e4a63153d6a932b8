/**
 * User-message fragments that carry injected context rather than what the user said: project
 * instructions (AGENTS.md) and skill bodies. Memories leave them out and compaction keeps them
 * as context instead of counting them as user requests. The shapes are the reference system's.
 */
import type { MessageItem, ResponseItem } from "./items.ts";
import { messageText, userMessage } from "./items.ts";

const PROJECT_DOC_HEAD = "# AGENTS.md instructions for ";

/** The user message that carries a session's AGENTS.md text. */
export function projectDocMessage(cwd: string, text: string): MessageItem {
  return userMessage(`${PROJECT_DOC_HEAD}${cwd}\n\n<INSTRUCTIONS>\n${text}\n</INSTRUCTIONS>`);
}

function isProjectDocText(text: string): boolean {
  return (
    text.trimStart().toLowerCase().startsWith(PROJECT_DOC_HEAD.toLowerCase()) &&
    text.trimEnd().endsWith("</INSTRUCTIONS>")
  );
}

export function isContextFragment(text: string): boolean {
  if (isProjectDocText(text)) return true;
  return text.trimStart().startsWith("<skill") && text.trimEnd().endsWith("</skill>");
}

/** The AGENTS.md message: compaction keeps it at the head of the new history. */
export function isProjectDocMessage(item: ResponseItem): boolean {
  return (
    item.type === "message" &&
    (item as MessageItem).role === "user" &&
    isProjectDocText(messageText(item as MessageItem))
  );
}

/** A user message made only of context fragments. */
export function isContextMessage(item: ResponseItem): boolean {
  if (item.type !== "message" || (item as MessageItem).role !== "user") return false;
  const text = messageText(item as MessageItem);
  return text.length > 0 && isContextFragment(text);
}
