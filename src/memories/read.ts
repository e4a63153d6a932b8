/** Read path: the memory summary injected into new sessions, and citation feedback into usage counts. */

import { readFile } from "node:fs/promises";
import path from "node:path";
import { loadMemorySettings, stateDbSpec } from "../config/memories.ts";
import { memoriesDir } from "../home/home.ts";
import type { SessionMemories } from "../session/open-options.ts";
import { redactSecrets } from "../util/redact.ts";
import { errorMessage, ok, type Result } from "../util/result.ts";
import { BYTES_PER_TOKEN } from "../util/truncate.ts";
import { truncateMiddle } from "./filter.ts";
import { readPathInstructions } from "./prompts.ts";
import { MEMORY_SUMMARY } from "./storage.ts";
import { recordUsage } from "./store/outputs.ts";

export const DEFAULT_SUMMARY_TOKENS = 2_500;

/**
 * Developer instructions carrying `memories/memory_summary.md` (at most `maxTokens`, head and tail
 * kept), or undefined when there is no summary yet.
 */
export async function memoryInstructions(
  home: string,
  maxTokens: number = DEFAULT_SUMMARY_TOKENS,
): Promise<string | undefined> {
  const root = memoriesDir(home);
  let text: string;
  try {
    text = (await readFile(path.join(root, MEMORY_SUMMARY), "utf8")).trim();
  } catch (e) {
    // No summary yet is the normal start; any other failure is said (sessionMemoryRead).
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  if (!text) return undefined;
  // The file may be a hand edit or predate redaction: redact before truncating, so no secret is cut in half.
  return readPathInstructions(root, truncateMiddle(redactSecrets(text), Math.max(1, maxTokens) * BYTES_PER_TOKEN));
}

/**
 * What a session is given: nothing when RELAY_NO_MEMORIES is set or `[memories] use_memories =
 * false`; a warning (and no block) when the settings or the summary cannot be read.
 */
export async function sessionMemoryRead(
  home: string,
  env: Record<string, string | undefined> = process.env,
): Promise<{ text?: string; warning?: string }> {
  const off = env.RELAY_NO_MEMORIES?.trim().toLowerCase();
  if (off && off !== "0" && off !== "false") return {};
  const settings = await loadMemorySettings(home);
  if ("error" in settings) return { warning: `memories were not injected: ${settings.error.message}` };
  if (!settings.ok.use_memories) return {};
  try {
    const text = await memoryInstructions(home, settings.ok.summary_max_tokens);
    return text === undefined ? {} : { text };
  } catch (e) {
    return {
      warning: `memories were not injected: ${path.join(memoriesDir(home), MEMORY_SUMMARY)} could not be read (${(e as Error).message})`,
    };
  }
}

/** The block alone (see sessionMemoryRead). */
export async function sessionMemoryBlock(
  home: string,
  env: Record<string, string | undefined> = process.env,
): Promise<string | undefined> {
  return (await sessionMemoryRead(home, env)).text;
}

export interface CitationEntry {
  path: string;
  lineStart: number;
  lineEnd: number;
  note: string;
}

export interface Citations {
  entries: CitationEntry[];
  threadIds: string[];
}

const BLOCK_RE = /<oai-mem-citation>([\s\S]*?)<\/oai-mem-citation>/g;

function between(text: string, open: string, close: string): string | undefined {
  const a = text.indexOf(open);
  if (a < 0) return undefined;
  const b = text.indexOf(close, a + open.length);
  return b < 0 ? undefined : text.slice(a + open.length, b);
}

/** Parses every citation block in `text`; undefined when it cites nothing. */
export function parseCitations(text: string): Citations | undefined {
  const entries: CitationEntry[] = [];
  const ids: string[] = [];
  for (const m of text.matchAll(BLOCK_RE)) {
    const body = m[1]!;
    for (const raw of (between(body, "<citation_entries>", "</citation_entries>") ?? "").split("\n")) {
      const line = raw.trim();
      if (!line) continue;
      const at = line.lastIndexOf("|note=[");
      if (at < 0 || !line.endsWith("]")) continue;
      const loc = line.slice(0, at);
      const note = line.slice(at + 7, -1);
      const colon = loc.lastIndexOf(":");
      if (colon <= 0) continue;
      const [a, b] = loc.slice(colon + 1).split(/-(.*)/s);
      const start = Number(a);
      const end = Number(b);
      if (!Number.isInteger(start) || !Number.isInteger(end)) continue;
      entries.push({ path: loc.slice(0, colon), lineStart: start, lineEnd: end, note });
    }
    const idText =
      between(body, "<rollout_ids>", "</rollout_ids>") ?? between(body, "<thread_ids>", "</thread_ids>") ?? "";
    for (const raw of idText.split("\n")) {
      const id = raw.trim();
      if (id && !ids.includes(id)) ids.push(id);
    }
  }
  if (!entries.length && !ids.length) return undefined;
  return { entries, threadIds: ids };
}

/** Text with citation blocks removed (what a user should see). */
export function stripCitations(text: string): string {
  return text.replace(BLOCK_RE, "").trimEnd();
}

/**
 * Raises usage_count of every session id cited in `finalMessage`. Opens the state DB (see
 * `stateDbSpec`) only when there is a citation; returns how many rows changed.
 */
export async function recordCitationUsage(
  home: string,
  finalMessage: string,
  dbSpec?: string,
  nowMs: number = Date.now(),
): Promise<Result<number>> {
  const c = parseCitations(finalMessage);
  if (!c?.threadIds.length) return ok(0);
  if (dbSpec === undefined) {
    const settings = await loadMemorySettings(home);
    if ("error" in settings) return settings;
    dbSpec = stateDbSpec(home, settings.ok);
  }
  // Loaded on demand: kysely and pg would add ~100 ms to every session start.
  const { openStateDb } = await import("./store/db.ts");
  const opened = await openStateDb(dbSpec);
  if ("error" in opened) return opened;
  try {
    return await recordUsage(opened.ok, c.threadIds, Math.floor(nowMs / 1000));
  } catch (e) {
    return { error: { code: "db_error", message: errorMessage(e) } };
  } finally {
    await opened.ok.close();
  }
}

/** The memory store as a session sees it (wired by the CLI into openSession). */
export const sessionMemories: SessionMemories = {
  block: (home) => sessionMemoryRead(home),
  recordCitations: (home, finalMessage) => recordCitationUsage(home, finalMessage),
};
