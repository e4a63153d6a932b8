/**
 * Parser for the apply_patch format:
 *
 *   *** Begin Patch
 *   *** Add File: <path>        then lines starting with "+"
 *   *** Delete File: <path>
 *   *** Update File: <path>     then optional "*** Move to: <path>", then hunks:
 *   @@ [context line]           lines " context", "-removed", "+added", optional "*** End of File"
 *   *** End Patch
 */

import type { ToolErrorCode } from "../../contracts/executor.ts";
import { err, ok, type Result } from "../../util/result.ts";

export interface HunkLine {
  kind: " " | "-" | "+";
  text: string;
}

export interface Chunk {
  /** Text after `@@ `: a line (e.g. a function header) to find before the hunk's old lines. */
  context?: string;
  oldLines: string[];
  newLines: string[];
  /** The hunk's lines in order; tells which new lines are context. */
  lines: HunkLine[];
  /** The hunk ended with `*** End of File`: its old lines are anchored at the end of the file. */
  endOfFile: boolean;
  /** 1-based line of the hunk in the patch text. */
  line: number;
}

export type PatchOp =
  | { kind: "add"; path: string; contents: string; line: number }
  | { kind: "delete"; path: string; line: number }
  | { kind: "update"; path: string; movePath?: string; chunks: Chunk[]; line: number };

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File:";
const DELETE = "*** Delete File:";
const UPDATE = "*** Update File:";
const MOVE = "*** Move to:";
const EOF_MARKER = "*** End of File";
// A unified-diff header such as "@@ -12,4 +12,6 @@" carries no usable context; ignore its numbers.
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$/;

const parseError = (line: number, message: string) => err("invalid_patch", `Invalid patch, line ${line}: ${message}`);

// No leading trim: a context line " *** Add File: x" is file content, not a header.
function isHeader(line: string): boolean {
  const t = line.trimEnd();
  return t.startsWith(ADD) || t.startsWith(DELETE) || t.startsWith(UPDATE) || t === END;
}

function show(line: string): string {
  return JSON.stringify(line.length > 120 ? `${line.slice(0, 120)}…` : line);
}

export function parsePatch(input: string): Result<PatchOp[], ToolErrorCode> {
  const env = envelope(input);
  if ("error" in env) return env;
  const { lines, first, last } = env.ok;
  const ops: PatchOp[] = [];
  let i = first + 1;
  while (i < last) {
    const raw = lines[i] as string;
    const header = raw.trim();
    const lineNo = i + 1;
    if (header.startsWith(ADD)) {
      const added = parseAdd(lines, i, last);
      if ("error" in added) return added;
      ops.push(added.ok.op);
      i = added.ok.next;
    } else if (header.startsWith(DELETE)) {
      const p = header.slice(DELETE.length).trim();
      if (p === "") return parseError(lineNo, "Delete File needs a path after the colon.");
      ops.push({ kind: "delete", path: p, line: lineNo });
      i++;
    } else if (header.startsWith(UPDATE)) {
      const updated = parseUpdate(lines, i, last);
      if ("error" in updated) return updated;
      ops.push(updated.ok.op);
      i = updated.ok.next;
    } else {
      return parseError(
        lineNo,
        `expected a file operation ("${ADD} <path>", "${DELETE} <path>" or "${UPDATE} <path>"), got ${show(raw)}.`,
      );
    }
  }
  if (ops.length === 0) return parseError(last + 1, "the patch contains no file operations.");
  return ok(ops);
}

/** The patch's lines and where its Begin and End lines are, blank lines and a heredoc wrapper around them tolerated. */
function envelope(input: string): Result<{ lines: string[]; first: number; last: number }, ToolErrorCode> {
  let lines = input.replace(/\r\n/g, "\n").split("\n");
  let first = 0; // index of the first line, for error line numbers after trimming
  // Tolerate blank lines around the envelope and a shell heredoc wrapper (<<'EOF' ... EOF).
  while (lines.length > 0 && (lines[lines.length - 1] as string).trim() === "") lines.pop();
  while (first < lines.length && (lines[first] as string).trim() === "") first++;
  if (first < lines.length && /^<<['"]?\w+['"]?$/.test((lines[first] as string).trim())) {
    const tag = (lines[first] as string).trim().replace(/^<<['"]?|['"]?$/g, "");
    if (lines.length - 1 > first && (lines[lines.length - 1] as string).trim() === tag) {
      first++;
      lines = lines.slice(0, -1);
    }
  }
  if (first >= lines.length) return parseError(1, `the patch is empty; it must start with "${BEGIN}".`);
  if ((lines[first] as string).trim() !== BEGIN) {
    return parseError(first + 1, `expected "${BEGIN}" as the first line, got ${show(lines[first] as string)}.`);
  }
  const last = lines.length - 1;
  if (last === first || (lines[last] as string).trim() !== END) {
    return parseError(last + 1, `expected "${END}" as the last line, got ${show(lines[last] as string)}.`);
  }
  return ok({ lines, first, last });
}

/** `*** Add File: p` at line `i` and its `+` lines; `next` is the line after them. */
function parseAdd(
  lines: readonly string[],
  i: number,
  last: number,
): Result<{ op: PatchOp; next: number }, ToolErrorCode> {
  const lineNo = i + 1;
  const p = (lines[i] as string).trim().slice(ADD.length).trim();
  if (p === "") return parseError(lineNo, "Add File needs a path after the colon.");
  const body: string[] = [];
  let j = i + 1;
  while (j < last && !isHeader(lines[j] as string)) {
    const l = lines[j] as string;
    if (!l.startsWith("+"))
      return parseError(j + 1, `every line of the added file ${p} must start with "+", got ${show(l)}.`);
    body.push(l.slice(1));
    j++;
  }
  return ok({
    op: { kind: "add", path: p, contents: body.length > 0 ? `${body.join("\n")}\n` : "", line: lineNo },
    next: j,
  });
}

/** `*** Update File: p` at line `i`, an optional `*** Move to:`, and its hunks. */
function parseUpdate(lines: string[], i: number, last: number): Result<{ op: PatchOp; next: number }, ToolErrorCode> {
  const lineNo = i + 1;
  const p = (lines[i] as string).trim().slice(UPDATE.length).trim();
  if (p === "") return parseError(lineNo, "Update File needs a path after the colon.");
  let j = i + 1;
  let movePath: string | undefined;
  if (j < last && (lines[j] as string).trim().startsWith(MOVE)) {
    movePath = (lines[j] as string).trim().slice(MOVE.length).trim();
    if (movePath === "") return parseError(j + 1, "Move to needs a path after the colon.");
    j++;
  }
  const parsed = parseChunks(lines, j, last, p);
  if ("error" in parsed) return parsed;
  if (parsed.ok.chunks.length === 0)
    return parseError(lineNo, `Update File ${p} has no hunks; add at least one "@@" hunk with the lines to change.`);
  return ok({
    op: {
      kind: "update",
      path: p,
      ...(movePath !== undefined ? { movePath } : {}),
      chunks: parsed.ok.chunks,
      line: lineNo,
    },
    next: parsed.ok.next,
  });
}

function parseChunks(
  lines: string[],
  start: number,
  end: number,
  file: string,
): Result<{ chunks: Chunk[]; next: number }, ToolErrorCode> {
  const chunks: Chunk[] = [];
  let current: Chunk | undefined;
  let i = start;
  for (; i < end; i++) {
    const l = lines[i] as string;
    if (isHeader(l)) break;
    const t = l.trim();
    if (t === "@@" || l.startsWith("@@ ")) {
      if (current) {
        const bad = checkChunk(current, file);
        if (bad) return bad;
      }
      let context: string | undefined = t === "@@" ? undefined : l.slice(3);
      const unified = UNIFIED_HEADER.exec(t);
      if (unified) context = unified[1] === "" ? undefined : unified[1];
      current = {
        ...(context !== undefined ? { context } : {}),
        oldLines: [],
        newLines: [],
        lines: [],
        endOfFile: false,
        line: i + 1,
      };
      chunks.push(current);
      continue;
    }
    if (t === EOF_MARKER) {
      if (!current) return parseError(i + 1, `"${EOF_MARKER}" must follow the lines of a hunk.`);
      current.endOfFile = true;
      const bad = checkChunk(current, file);
      if (bad) return bad;
      current = undefined;
      continue;
    }
    const mark = l[0];
    if (mark === " " || mark === "-" || mark === "+" || l === "") {
      // The first hunk may omit its "@@" line.
      if (!current) {
        if (chunks.length > 0) {
          return parseError(i + 1, `expected "@@" to start a new hunk after "${EOF_MARKER}", got ${show(l)}.`);
        }
        current = { oldLines: [], newLines: [], lines: [], endOfFile: false, line: i + 1 };
        chunks.push(current);
      }
      const text = l.slice(1);
      // An empty line stands for an empty context line (editors strip the lone space).
      const kind: HunkLine["kind"] = l === "" ? " " : (mark as HunkLine["kind"]);
      if (kind !== "+") current.oldLines.push(text);
      if (kind !== "-") current.newLines.push(text);
      current.lines.push({ kind, text });
      continue;
    }
    return parseError(
      i + 1,
      `unexpected line in a hunk of ${file}: every hunk line must start with " " (context), "-" (remove) or "+" (add), or be "@@ ..." or "${EOF_MARKER}"; got ${show(l)}.`,
    );
  }
  if (current) {
    const bad = checkChunk(current, file);
    if (bad) return bad;
  }
  return ok({ chunks, next: i });
}

function checkChunk(chunk: Chunk, file: string): Result<never, ToolErrorCode> | undefined {
  if (chunk.oldLines.length === 0 && chunk.newLines.length === 0) {
    return parseError(
      chunk.line,
      `the hunk for ${file} has no lines; give context (" "), removed ("-") or added ("+") lines.`,
    );
  }
  return undefined;
}
