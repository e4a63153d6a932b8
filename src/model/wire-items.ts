/**
 * History items as a model API takes them. Items read back from another program's rollout
 * (Codex's) carry fields only that program understands (`internal_chat_message_metadata_passthrough`,
 * `end_turn`, ...) and item types of tools Relay does not offer (`local_shell_call`,
 * `web_search_call`, ...); an API answers those with HTTP 400. Each item keeps exactly the fields
 * its type has in the Responses API. A local shell call becomes a function call, so its output
 * still has the call it answers; items of hosted tools are left out, as is reasoning that cannot
 * be replayed (no encrypted content). Item ids go too: with `store: false` they point at nothing.
 */
import type { ResponseItem } from "./items.ts";

type Loose = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function part(p: Loose): Loose | undefined {
  if ((p.type === "input_text" || p.type === "output_text") && typeof p.text === "string")
    return { type: p.type, text: p.text };
  if (p.type === "input_image" && typeof p.image_url === "string")
    return typeof p.detail === "string"
      ? { type: p.type, image_url: p.image_url, detail: p.detail }
      : { type: p.type, image_url: p.image_url };
  return undefined;
}

function message(m: Loose): Loose | undefined {
  if (typeof m.role !== "string" || !Array.isArray(m.content)) return undefined;
  const content = (m.content as Loose[]).map(part).filter((p) => p !== undefined);
  return { type: "message", role: m.role, content };
}

/** A Codex `local_shell_call` as the function call it is: the command goes in the arguments. */
function localShell(c: Loose): Loose | undefined {
  const callId = str(c.call_id) ?? str(c.id);
  return callId
    ? { type: "function_call", name: "shell", arguments: JSON.stringify(c.action ?? {}), call_id: callId }
    : undefined;
}

const pick = (o: Loose, keys: string[]): Loose | undefined =>
  keys.every((k) => o[k] !== undefined) ? Object.fromEntries(keys.map((k) => [k, o[k]])) : undefined;

function wireItem(item: Loose): Loose | undefined {
  switch (item.type) {
    case "message":
      return message(item);
    case "function_call":
      return pick(item, ["type", "name", "arguments", "call_id"]);
    case "custom_tool_call":
      return pick(item, ["type", "name", "input", "call_id"]);
    case "function_call_output":
    case "custom_tool_call_output":
      return pick(item, ["type", "call_id", "output"]);
    case "reasoning":
      return item.encrypted_content
        ? {
            type: "reasoning",
            summary: Array.isArray(item.summary) ? item.summary : [],
            encrypted_content: item.encrypted_content,
          }
        : undefined;
    case "local_shell_call":
      return localShell(item);
    default:
      return undefined;
  }
}

export function wireItems(items: readonly ResponseItem[]): ResponseItem[] {
  const out: ResponseItem[] = [];
  for (const item of items) {
    const w = wireItem(item as Loose);
    if (w) out.push(w as ResponseItem);
  }
  return out;
}
