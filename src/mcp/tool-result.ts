/**
 * An MCP `tools/call` result as the text the model reads: text content joined, images, audio and
 * resources summarised in one line each (their bytes are not text the model can use here),
 * `structuredContent` as JSON when there is no content, the whole cut to the session's output
 * budget like an exec output. `isError` makes it a failed call.
 */
import { truncateMiddle } from "../util/truncate.ts";

type Json = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** About how many bytes a base64 text decodes to. */
const base64Bytes = (data: unknown): number => (typeof data === "string" ? Math.floor((data.length * 3) / 4) : 0);

function describeResource(r: Json): string {
  const uri = str(r.uri) ?? "?";
  const mime = str(r.mimeType);
  const text = str(r.text);
  const size = text !== undefined ? `${text.length} characters of text` : `${base64Bytes(r.blob)} bytes`;
  return `[resource ${uri}${mime ? ` (${mime})` : ""}: ${size}]`;
}

function contentLine(item: unknown): string {
  if (item === null || typeof item !== "object") return `[content: ${JSON.stringify(item)?.slice(0, 200)}]`;
  const c = item as Json;
  switch (c.type) {
    case "text":
      return str(c.text) ?? "";
    case "image":
    case "audio":
      return `[${c.type} ${str(c.mimeType) ?? "?"}, ${base64Bytes(c.data)} bytes; not shown]`;
    case "resource_link":
      return `[resource link ${str(c.uri) ?? "?"}${str(c.name) ? ` (${str(c.name)})` : ""}${str(c.description) ? `: ${str(c.description)}` : ""}]`;
    case "resource":
      return c.resource && typeof c.resource === "object" ? describeResource(c.resource as Json) : "[resource]";
    default:
      return `[${String(c.type)} content]`;
  }
}

export interface McpCallText {
  text: string;
  isError: boolean;
}

export function mcpResultText(result: unknown, maxOutputTokens: number): McpCallText {
  const r = (result !== null && typeof result === "object" ? result : {}) as Json;
  const content = Array.isArray(r.content) ? r.content : [];
  let text = content.map(contentLine).join("\n");
  if (content.length === 0 && r.structuredContent !== undefined) text = JSON.stringify(r.structuredContent);
  // Older servers answer with `toolResult` (protocol 2024-10-07).
  if (content.length === 0 && r.structuredContent === undefined && r.toolResult !== undefined)
    text = JSON.stringify(r.toolResult);
  return { text: truncateMiddle(text, maxOutputTokens).text, isError: r.isError === true };
}
