/**
 * A saved session as a conversation for people (`relay sessions show`): its meta, then in file
 * order each turn, user prompt, assistant message, reasoning summary, tool call (with the start
 * of its output) and compaction. Bounded: every text is cut (clip.ts), and past `maxEntries` the
 * middle of the conversation is left out, with the count.
 */
import { z } from "zod";
import { type MessageItem, messageText, type ReasoningItem } from "../model/items.ts";
import { clipLines, oneLine } from "../util/clip.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { ok, type Result } from "../util/result.ts";
import { readRollout } from "./reader.ts";
import { type Compacted, type RolloutLine, type SessionMeta, SessionSourceSchema, type TurnContext } from "./schema.ts";

const at = lazySchema(() => z.string());
const ToolEntrySchema = lazySchema(() =>
  z.object({
    kind: z.literal("tool"),
    at,
    name: z.string(),
    call_id: z.string(),
    input: z.string(),
    output: z.string().nullable(),
  }),
);
export const TranscriptEntrySchema = lazySchema(() =>
  z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("turn"), at, model: z.string(), cwd: z.string() }),
    z.object({ kind: z.literal("user"), at, text: z.string() }),
    /** A user-role message that is context, not a prompt (a skill body, Codex's environment context). */
    z.object({ kind: z.literal("context"), at, text: z.string() }),
    z.object({ kind: z.literal("assistant"), at, text: z.string() }),
    z.object({ kind: z.literal("reasoning"), at, text: z.string() }),
    ToolEntrySchema,
    z.object({ kind: z.literal("compacted"), at, text: z.string() }),
  ]),
);
export type TranscriptEntry = z.infer<typeof TranscriptEntrySchema>;
type ToolEntry = z.infer<typeof ToolEntrySchema>;

export const TranscriptMetaSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    started_at: z.string(),
    cwd: z.string(),
    originator: z.string(),
    cli_version: z.string(),
    source: SessionSourceSchema,
    model_provider: z.string().nullable(),
    forked_from_id: z.string().nullable(),
    forked_from_path: z.string().nullable(),
  }),
);

export const SessionTranscriptSchema = lazySchema(() =>
  z.object({
    path: z.string(),
    meta: TranscriptMetaSchema,
    entries: z.array(TranscriptEntrySchema),
    /** Entries left out of the middle, before index `omitted_at` of `entries`. */
    omitted: z.number().int(),
    omitted_at: z.number().int(),
    /** Lines of the file that could not be read. */
    warnings: z.array(z.string()),
  }),
);
export type SessionTranscript = z.infer<typeof SessionTranscriptSchema>;

export const DEFAULT_MAX_ENTRIES = 200;

/** Reads `file` and lays it out; errors as values (missing file, not a rollout). */
export async function readTranscript(
  file: string,
  opts: { maxEntries?: number } = {},
): Promise<Result<SessionTranscript>> {
  const r = await readRollout(file);
  if ("error" in r) return r;
  const all = transcriptEntries(r.ok.lines);
  const max = Math.max(1, opts.maxEntries ?? DEFAULT_MAX_ENTRIES);
  const head = Math.floor(max / 4);
  const omitted = Math.max(0, all.length - max);
  const entries = omitted ? [...all.slice(0, head), ...all.slice(head + omitted)] : all;
  return ok({
    path: file,
    meta: transcriptMeta(r.ok.meta),
    entries,
    omitted,
    omitted_at: omitted ? head : entries.length,
    warnings: r.ok.warnings,
  });
}

function transcriptMeta(m: SessionMeta): z.infer<typeof TranscriptMetaSchema> {
  return {
    id: m.id,
    started_at: m.timestamp,
    cwd: m.cwd,
    originator: m.originator,
    cli_version: m.cli_version,
    source: m.source,
    model_provider: m.model_provider ?? null,
    forked_from_id: m.forked_from_id ?? null,
    forked_from_path: m.forked_from_path ?? null,
  };
}

/** Every entry of the conversation, in file order; a tool output joins its call's entry. */
export function transcriptEntries(lines: Iterable<RolloutLine>): TranscriptEntry[] {
  const out: TranscriptEntry[] = [];
  const calls = new Map<string, ToolEntry>();
  for (const line of lines) {
    const p = line.payload as Record<string, unknown>;
    if (line.type === "turn_context")
      out.push({ kind: "turn", at: line.timestamp, model: (p as TurnContext).model, cwd: (p as TurnContext).cwd });
    else if (line.type === "compacted")
      out.push({ kind: "compacted", at: line.timestamp, text: clipLines((p as Compacted).message, 12, 1500) });
    else if (line.type === "response_item") {
      const e = itemEntry(p, line.timestamp, calls);
      if (e) out.push(e);
    }
  }
  return out;
}

function itemEntry(p: Record<string, unknown>, at: string, calls: Map<string, ToolEntry>): TranscriptEntry | undefined {
  switch (p.type) {
    case "message":
      return messageEntry(p as MessageItem, at);
    case "reasoning": {
      const text = ((p as ReasoningItem).summary ?? []).map((s) => s.text).join(" ");
      return text.trim() ? { kind: "reasoning", at, text: oneLine(text, 300) } : undefined;
    }
    case "function_call":
    case "custom_tool_call": {
      const e: ToolEntry = {
        kind: "tool",
        at,
        name: String(p.name),
        call_id: String(p.call_id),
        input: toolInput(p),
        output: null,
      };
      calls.set(e.call_id, e);
      return e;
    }
    case "function_call_output":
    case "custom_tool_call_output": {
      const call = calls.get(String(p.call_id));
      if (call)
        call.output = clipLines(
          condenseExecHeader(typeof p.output === "string" ? p.output : JSON.stringify(p.output)),
          8,
          800,
        );
      return undefined;
    }
    default:
      return undefined;
  }
}

function messageEntry(m: MessageItem, at: string): TranscriptEntry | undefined {
  const text = messageText(m);
  if (m.role === "assistant") return { kind: "assistant", at, text: clipLines(text, 60, 6000) };
  if (m.role !== "user") return undefined;
  if (/^\s*[<#]/.test(text)) return { kind: "context", at, text: oneLine(text, 120) };
  return { kind: "user", at, text: clipLines(text, 40, 4000) };
}

/** The command of an exec call, the patch of apply_patch, else the arguments as written. */
function toolInput(p: Record<string, unknown>): string {
  const raw = typeof p.input === "string" ? p.input : String(p.arguments ?? "");
  let shown = raw;
  try {
    const args = JSON.parse(raw) as Record<string, unknown>;
    shown =
      typeof args.cmd === "string" ? args.cmd : typeof args.input === "string" ? args.input : JSON.stringify(args);
  } catch {
    // freeform input (custom tools) or damaged JSON: shown as written
  }
  return clipLines(shown, 6, 600);
}

const EXEC_HEADER =
  /^(?:Chunk ID: \S*\n)?Wall time: ([\d.]+) seconds\n(?:Process exited with code (-?\d+)\n)?(?:Process running with session ID (\d+)\n)?Original token count: \d+\nOutput:\n/;

/** The header of an exec result (session/exec-format.ts) on one short line: `[exit 0 · 0.50 s]`. */
function condenseExecHeader(output: string): string {
  const m = EXEC_HEADER.exec(output);
  if (!m) return output;
  const state =
    m[2] !== undefined ? `exit ${m[2]}` : m[3] !== undefined ? `running as session ${m[3]}` : "no exit code";
  return `[${state} · ${Number(m[1]).toFixed(2)} s]\n${output.slice(m[0].length)}`;
}
