/**
 * Token-budget truncation of tool output. Tokens are estimated as ceil(bytes / 4). Over budget,
 * the middle is cut (the start and the end of output carry the most signal) and the text says
 * how many lines there were in all and how many tokens were cut.
 */
import { Buffer } from "node:buffer";

export const BYTES_PER_TOKEN = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / BYTES_PER_TOKEN);
}

export interface Truncated {
  text: string;
  truncated: boolean;
  originalTokens: number;
  totalLines: number;
  /** When truncated: the 1-based lines the cut touches, first to last (the edge lines are partly shown). */
  cutLines?: { from: number; to: number };
}

export function truncateMiddle(text: string, maxTokens: number): Truncated {
  const bytes = Buffer.from(text, "utf8");
  const originalTokens = Math.ceil(bytes.length / BYTES_PER_TOKEN);
  const totalLines = countLines(text);
  const budget = Math.max(0, maxTokens) * BYTES_PER_TOKEN;
  if (bytes.length <= budget) return { text, truncated: false, originalTokens, totalLines };
  const headBytes = Math.floor(budget / 2);
  const tailBytes = budget - headBytes;
  const headEnd = utf8Boundary(bytes, headBytes, "down");
  const tailStart = utf8Boundary(bytes, bytes.length - tailBytes, "up");
  const cutTokens = Math.ceil((tailStart - headEnd) / BYTES_PER_TOKEN);
  const head = bytes.subarray(0, headEnd).toString("utf8");
  const tail = bytes.subarray(tailStart).toString("utf8");
  return {
    text: `Total output lines: ${totalLines}\n\n${head}…${cutTokens} tokens truncated…${tail}`,
    truncated: true,
    originalTokens,
    totalLines,
    cutLines: {
      from: newlinesBefore(bytes, headEnd) + 1,
      to: newlinesBefore(bytes, Math.max(headEnd, tailStart - 1)) + 1,
    },
  };
}

function newlinesBefore(bytes: Buffer, end: number): number {
  let n = 0;
  for (let i = bytes.indexOf(10); i !== -1 && i < end; i = bytes.indexOf(10, i + 1)) n++;
  return n;
}

function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return text.endsWith("\n") ? n : n + 1;
}

/** Moves `at` to the nearest UTF-8 character start so no character is split. */
function utf8Boundary(bytes: Buffer, at: number, dir: "up" | "down"): number {
  let i = Math.max(0, Math.min(bytes.length, at));
  while (i > 0 && i < bytes.length && (bytes[i]! & 0xc0) === 0x80) i += dir === "up" ? 1 : -1;
  return i;
}
