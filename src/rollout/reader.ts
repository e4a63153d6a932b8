/**
 * Reads a rollout line by line (files can be large) and rebuilds the model history.
 * Damage is tolerated, never fatal past the first line: a torn last line (crash mid-write) and
 * garbled or invalid lines anywhere else are skipped, each with a warning naming where it was.
 */
import { Buffer } from "node:buffer";
import { closeSync, openSync, readSync } from "node:fs";
import { assistantMessage, type ResponseItem } from "../model/items.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { parseRolloutLine, type RolloutLine, type SessionMeta, type TurnContext } from "./schema.ts";

export interface RawLine {
  /** 1-based. */
  lineNo: number;
  text: string;
  bytes: number;
  /** False only for a last line without a trailing newline. */
  terminated: boolean;
}

const CHUNK = 64 * 1024;

/**
 * The file in chunks of at most 64 KiB; each chunk is only valid until the next one is asked for.
 * Reads are synchronous: one 64 KiB read blocks for microseconds, and the promise-based file
 * handle cost more than the parsing when phase 1 reads thousands of small rollouts.
 */
async function* fileChunks(file: string): AsyncGenerator<Uint8Array> {
  const fd = openSync(file, "r");
  const buf = spareBuffers.pop() ?? Buffer.allocUnsafe(CHUNK);
  try {
    for (;;) {
      const bytesRead = readSync(fd, buf, 0, CHUNK, null);
      if (bytesRead === 0) break;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    closeSync(fd);
    if (spareBuffers.length < MAX_SPARE_BUFFERS) spareBuffers.push(buf);
  }
}

/**
 * Read buffers of finished readers, reused: otherwise every rollout read leaves a 64 KiB buffer
 * outside the JS heap for the collector (phase 1 reads thousands).
 */
const spareBuffers: Buffer[] = [];
const MAX_SPARE_BUFFERS = 16;

/**
 * Splits a file (or `source`, the same bytes as a stream) into lines without loading it whole:
 * what it holds at any time is one chunk and the unfinished line. Throws on I/O errors.
 */
export async function* rawLines(
  file: string,
  source: AsyncIterable<Uint8Array> = fileChunks(file),
): AsyncGenerator<RawLine> {
  let pending: Buffer[] = [];
  let lineNo = 0;
  for await (const bytes of source) {
    const chunk = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      const line = pending.length ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      yield { lineNo: ++lineNo, text: line.toString("utf8"), bytes: line.length + 1, terminated: true };
      start = nl + 1;
    }
    // A chunk may be reused by the next read, so keep a copy of the unfinished tail.
    if (start < chunk.length) pending.push(Buffer.from(chunk.subarray(start)));
  }
  if (pending.length) {
    const line = Buffer.concat(pending);
    yield { lineNo: ++lineNo, text: line.toString("utf8"), bytes: line.length, terminated: false };
  }
}

export type RolloutEntry =
  | { kind: "line"; lineNo: number; line: RolloutLine }
  /** `message` names the file and the line; `reason` says only what is wrong with the line. */
  | { kind: "skipped"; lineNo: number; torn: boolean; message: string; reason: string };

/** Parsed lines in file order; unusable lines come out as `skipped` with a ready-made message. */
export async function* streamRollout(file: string, source?: AsyncIterable<Uint8Array>): AsyncGenerator<RolloutEntry> {
  for await (const raw of rawLines(file, source)) {
    if (raw.text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw.text);
    } catch {
      if (!raw.terminated) {
        yield {
          kind: "skipped",
          lineNo: raw.lineNo,
          torn: true,
          message: `ignored a torn last line (${raw.bytes} bytes) at the end of ${file}: the previous run probably crashed mid-write`,
          reason: `a torn last line (${raw.bytes} bytes)`,
        };
      } else {
        yield {
          kind: "skipped",
          lineNo: raw.lineNo,
          torn: false,
          message: `skipped line ${raw.lineNo} of ${file}: not valid JSON`,
          reason: "not valid JSON",
        };
      }
      continue;
    }
    const parsed = parseRolloutLine(value);
    if ("error" in parsed) {
      yield {
        kind: "skipped",
        lineNo: raw.lineNo,
        torn: false,
        message: `skipped line ${raw.lineNo} of ${file}: ${parsed.error}`,
        reason: parsed.error,
      };
      continue;
    }
    yield { kind: "line", lineNo: raw.lineNo, line: parsed.ok };
  }
}

export interface Rollout {
  path: string;
  /** From the first line (later session_meta lines, e.g. from forks, stay in `lines`). */
  meta: SessionMeta;
  /** Every usable line, including types Relay does not interpret. */
  lines: RolloutLine[];
  /** Number of the last non-empty line in the file, usable or not. */
  lineCount: number;
  /** The model-visible history to resume from. */
  items: ResponseItem[];
  lastTurnContext?: TurnContext;
  warnings: string[];
}

/**
 * Reads a whole rollout. Errors (as values): missing/unreadable file, empty file, or a first
 * line that is not a valid session_meta.
 */
export async function readRollout(file: string): Promise<Result<Rollout>> {
  const lines: RolloutLine[] = [];
  let lastTurnContext: TurnContext | undefined;
  const r = await visitRollout(file, (line) => {
    lines.push(line);
    if (line.type === "turn_context") lastTurnContext = line.payload as TurnContext;
  });
  if ("error" in r) return r;
  return ok({
    path: file,
    meta: r.ok.meta,
    lines,
    lineCount: r.ok.lineCount,
    items: reconstructHistory(lines),
    lastTurnContext,
    warnings: r.ok.warnings,
  });
}

/**
 * Streams a rollout's usable lines, in order, to `visit` and keeps none of them: memory stays
 * bounded by the longest line whatever the file's size. The same errors as `readRollout`.
 * `source` gives the file's bytes as a stream instead of opening `file` (named in messages).
 */
export async function visitRollout(
  file: string,
  visit: (line: RolloutLine) => void,
  source?: AsyncIterable<Uint8Array>,
): Promise<Result<{ meta: SessionMeta; warnings: string[]; lineCount: number }>> {
  let meta: SessionMeta | undefined;
  const warnings: string[] = [];
  let lineCount = 0;
  try {
    for await (const entry of streamRollout(file, source)) {
      if (meta === undefined) {
        const first = firstLineMeta(file, entry);
        if ("error" in first) return first;
        meta = first.ok;
      }
      lineCount = entry.lineNo;
      if (entry.kind === "skipped") warnings.push(entry.message);
      else visit(entry.line);
    }
  } catch (e) {
    return ioError(file, e);
  }
  if (meta === undefined) return err("rollout_empty", `rollout ${file} is empty`, { path: file });
  return ok({ meta, warnings, lineCount });
}

/** Reads only the first line's session_meta (cheap: stops after one line). */
export async function readSessionMeta(file: string): Promise<Result<SessionMeta>> {
  try {
    for await (const entry of streamRollout(file)) return firstLineMeta(file, entry);
  } catch (e) {
    return ioError(file, e);
  }
  return err("rollout_empty", `rollout ${file} is empty`, { path: file });
}

function firstLineMeta(file: string, entry: RolloutEntry): Result<SessionMeta> {
  if (entry.kind === "line" && entry.line.type === "session_meta") return ok(entry.line.payload as SessionMeta);
  const why =
    entry.kind === "line"
      ? `its first line is a ${entry.line.type} line`
      : entry.torn
        ? "it holds only a torn line (the run probably crashed while creating it)"
        : entry.message.replace(/^skipped /, "");
  return err("rollout_invalid", `${file} is not a rollout: it must start with a session_meta line, but ${why}`, {
    path: file,
  });
}

function ioError(file: string, e: unknown): { error: { code: string; message: string; data?: unknown } } {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return err("rollout_not_found", `rollout ${file} does not exist`, { path: file });
  return err("rollout_read", `cannot read rollout ${file}: ${errorMessage(e)}`, { path: file });
}

/**
 * Replays history: response items in order; a `compacted` line with `replacement_history`
 * replaces everything before it. A legacy `compacted` line without it (only old Codex files;
 * Relay always writes the replacement) becomes a single assistant message with the summary text:
 * the summary is written as a self-contained handoff, and re-deriving the kept user messages
 * would need the exact prompts and token budget of the build that wrote the file.
 * Legacy `ghost_snapshot` items are dropped.
 */
export function reconstructHistory(lines: Iterable<RolloutLine>): ResponseItem[] {
  let items: ResponseItem[] = [];
  for (const line of lines) {
    if (line.type === "response_item") {
      const item = line.payload as ResponseItem;
      if (item.type !== "ghost_snapshot") items.push(item);
    } else if (line.type === "compacted") {
      const c = line.payload as { message: string; replacement_history?: ResponseItem[] | null };
      items = c.replacement_history
        ? c.replacement_history.filter((i) => i.type !== "ghost_snapshot")
        : [assistantMessage(c.message)];
    }
  }
  return items;
}
