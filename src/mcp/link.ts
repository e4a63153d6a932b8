/** What a session holds of one running MCP server's connection, whatever carries it. */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Result } from "../util/result.ts";

export const STDERR_TAIL_CHARS = 4000;

export interface McpLink {
  /** Handed to the SDK's Client, which starts it. */
  transport: Transport;
  /** How the server ended, once it has, e.g. ` (code 1): Error: no such table` (empty while it runs). */
  describeEnd(): string;
  /** What to fix, for a failure this kind of link knows (an HTTP 401: the token's variable). */
  explain?(message: string, code: unknown): string | undefined;
}

/** Makes a fresh, unstarted link for each (re)start. */
export type McpLinkFactory = () => Promise<Result<McpLink>>;

/** ` (code N): <stderr tail>`, the part of "MCP server X exited…" that says how. */
export function describeExit(
  code: number | null | undefined,
  signal: string | null | undefined,
  stderrTail: string,
): string {
  const how = signal ? ` (killed by ${signal})` : code !== undefined && code !== null ? ` (code ${code})` : "";
  const tail = stderrTail.trim();
  return `${how}${tail ? `: ${tail.length > 1500 ? `…${tail.slice(-1500)}` : tail}` : ""}`;
}
