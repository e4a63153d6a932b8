/**
 * One line's worth of facts about each saved session, for `relay sessions list` and the
 * `relay run --resume` picker. Cheap per file, so that thousands of rollouts list quickly:
 * - the head (at most HEAD_LINES lines) gives the session_meta and the first user prompt;
 * - turns are the `turn_context` lines (one per turn, as Codex writes them too), counted by a
 *   byte search without parsing (scan.ts), over at most TURN_SCAN_BYTES of the file; past that
 *   the count is a lower bound (`turns_complete: false`);
 * - the model is the one the last turn_context names (that one line is parsed).
 * A file that is not a rollout is still listed, with the reason in `error`; nothing here throws.
 */
import { z } from "zod";
import { type MessageItem, messageText } from "../model/items.ts";
import { oneLine } from "../util/clip.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { errorMessage } from "../util/result.ts";
import { listRollouts, type RolloutFile } from "./find.ts";
import { type RolloutEntry, streamRollout } from "./reader.ts";
import { countLinesOfType, readLineAt } from "./scan.ts";
import { INFTY_SOURCE, type RolloutLine, type SessionMeta, TurnContextLineSchema } from "./schema.ts";

export const SessionSummarySchema = lazySchema(() =>
  z.object({
    id: z.string(),
    path: z.string(),
    /** When the session started: the file name's local time, as ISO-8601 UTC. */
    started_at: z.string(),
    cwd: z.string().nullable(),
    /** The first thing the user asked, on one line, cut to PROMPT_CHARS. */
    first_prompt: z.string().nullable(),
    /** The model of the last turn; null before the first turn. */
    model: z.string().nullable(),
    turns: z.number().int().nullable(),
    /** False when the file is longer than the scan bound: `turns` is then a lower bound. */
    turns_complete: z.boolean(),
    originator: z.string().nullable(),
    forked_from_id: z.string().nullable(),
    /** Who started it: cli, exec, infty (a run's role; `infty` says which), or another program's word. */
    source: z.string().nullable(),
    infty: z.object({ run_id: z.string(), role: z.string() }).nullable(),
    /** Why the file cannot be read as a rollout; every field but id, path and started_at is then null. */
    error: z.string().nullable(),
  }),
);
export type SessionSummary = z.infer<typeof SessionSummarySchema>;

export const SessionListSchema = lazySchema(() =>
  z.object({
    sessions: z.array(SessionSummarySchema),
    /** Rollout files found in all. */
    total: z.number().int(),
    /** Files not looked at because the limit was reached (some may be sessions the filter leaves out). */
    more: z.number().int(),
    /** Sessions looked at and left out by the filter (infty runs' role sessions, by default). */
    hidden: z.number().int(),
  }),
);
export type SessionList = z.infer<typeof SessionListSchema>;

const HEAD_LINES = 64;
export const TURN_SCAN_BYTES = 32 * 1024 * 1024;
const TURN_LINE_BYTES = 1024 * 1024;
const PROMPT_CHARS = 200;
/** Files summarised at the same time. */
const PARALLEL = 8;

/** Which sessions a listing shows. */
export type SessionFilter = (s: SessionSummary) => boolean;

/** The default: everything but infty runs' role sessions (their run drives them). An unreadable file is shown, with why. */
export const ownSessions: SessionFilter = (s) => s.source !== INFTY_SOURCE && s.infty === null;

/**
 * The newest `limit` sessions that pass `filter` (all without a limit), summarised, newest
 * first. Files are summarised a batch at a time until enough pass, so a listing reads only
 * the heads of the files it looks at.
 */
export async function listSessions(
  home: string,
  opts: { limit?: number; filter?: SessionFilter } = {},
): Promise<SessionList> {
  const files = await listRollouts(home);
  const limit = opts.limit ?? Infinity;
  const sessions: SessionSummary[] = [];
  let looked = 0;
  let hidden = 0;
  while (sessions.length < limit && looked < files.length) {
    // Enough for the rest of the page if none is left out (at least PARALLEL, read together).
    const batch = await summarizeAll(files.slice(looked, looked + Math.max(PARALLEL, limit - sessions.length)));
    for (const s of batch) {
      looked++;
      if (opts.filter && !opts.filter(s)) hidden++;
      else sessions.push(s);
      if (sessions.length === limit) break;
    }
  }
  return { sessions, total: files.length, more: files.length - looked, hidden };
}

/** Summaries of `files`, in their order, PARALLEL at a time. */
async function summarizeAll(files: RolloutFile[]): Promise<SessionSummary[]> {
  const out: SessionSummary[] = new Array(files.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < files.length; i = next++) out[i] = await summarizeRollout(files[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, files.length) }, worker));
  return out;
}

export async function summarizeRollout(f: RolloutFile): Promise<SessionSummary> {
  const blank: SessionSummary = {
    id: f.id,
    path: f.path,
    started_at: f.createdAt.toISOString(),
    cwd: null,
    first_prompt: null,
    model: null,
    turns: null,
    turns_complete: true,
    originator: null,
    forked_from_id: null,
    source: null,
    infty: null,
    error: null,
  };
  const head = await readHead(f.path);
  if ("reason" in head) return { ...blank, error: head.reason };
  const { meta, prompt } = head;
  const fromMeta = {
    cwd: meta.cwd,
    originator: meta.originator,
    forked_from_id: meta.forked_from_id ?? null,
    first_prompt: prompt ? oneLine(prompt, PROMPT_CHARS) : null,
    source: typeof meta.source === "string" ? meta.source : JSON.stringify(meta.source),
    infty: meta.infty ? { run_id: meta.infty.run_id, role: meta.infty.role } : null,
  };
  try {
    const turns = await countLinesOfType(f.path, "turn_context", TURN_SCAN_BYTES);
    const model = turns.lastLineAt === undefined ? null : await modelAt(f.path, turns.lastLineAt);
    return { ...blank, ...fromMeta, model, turns: turns.count, turns_complete: turns.complete };
  } catch (e) {
    return { ...blank, ...fromMeta, error: `cannot read it: ${errorMessage(e)}` };
  }
}

interface Head {
  meta: SessionMeta;
  prompt?: string;
}

/** The session_meta and the first user prompt, from the first HEAD_LINES lines. */
async function readHead(file: string): Promise<Head | { reason: string }> {
  let head: Head | undefined;
  let fallback: string | undefined;
  let seen = 0;
  try {
    for await (const entry of streamRollout(file)) {
      if (!head) {
        const first = metaOf(entry);
        if ("reason" in first) return first;
        head = { meta: first.meta };
        continue;
      }
      if (entry.kind === "line") {
        const p = promptOf(entry.line);
        if (p?.typed) return { ...head, prompt: p.text };
        fallback ??= p?.text;
      }
      if (++seen >= HEAD_LINES) break;
    }
  } catch (e) {
    return { reason: `cannot read it: ${errorMessage(e)}` };
  }
  return head ? { ...head, prompt: fallback } : { reason: "the file is empty" };
}

function metaOf(entry: RolloutEntry): { meta: SessionMeta } | { reason: string } {
  if (entry.kind === "line" && entry.line.type === "session_meta") return { meta: entry.line.payload as SessionMeta };
  if (entry.kind === "line")
    return { reason: `not a rollout: it starts with a ${entry.line.type} line, not session_meta` };
  if (entry.torn)
    return { reason: "not a rollout yet: it holds only a torn line (the run probably crashed while creating it)" };
  return { reason: `not a rollout: line ${entry.lineNo}: ${entry.reason}` };
}

/**
 * The user's prompt: a `user_message` event holds exactly what was typed (Relay and Codex write
 * one per prompt). A user message item is only a fallback, since context (skills, Codex's
 * `<environment_context>`, AGENTS.md) also comes as user messages; those that start with `<`
 * or `#` are passed over.
 */
function promptOf(line: RolloutLine): { text: string; typed: boolean } | undefined {
  const payload = line.payload as Record<string, unknown>;
  if (line.type === "event_msg" && payload.type === "user_message" && typeof payload.message === "string")
    return { text: payload.message, typed: true };
  if (line.type !== "response_item" || payload.type !== "message" || payload.role !== "user") return undefined;
  const text = messageText(payload as MessageItem).trim();
  return text === "" || /^[<#]/.test(text) ? undefined : { text, typed: false };
}

async function modelAt(file: string, offset: number): Promise<string | null> {
  const text = await readLineAt(file, offset, TURN_LINE_BYTES);
  if (text === undefined) return null;
  try {
    const line = TurnContextLineSchema.safeParse(JSON.parse(text));
    return line.success ? line.data.payload.model : null;
  } catch {
    return null;
  }
}
