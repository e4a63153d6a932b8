/**
 * Applies parsed patch operations all-or-nothing: every new file content is computed in memory and
 * every target is checked against the sandbox before the first byte is written.
 */
import fs from "node:fs/promises";
import path from "node:path";
import type { ToolErrorCode } from "../../contracts/executor.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import { checkWritable, fsErrorCode, realPathOfPossiblyMissing, resolveToolPath } from "../files/paths.ts";
import type { ToolContext, ToolOutput } from "../tool.ts";
import type { Chunk, HunkLine, PatchOp } from "./parse.ts";

interface FileState {
  /** null: the file is deleted (or absent) once the patch is applied. */
  content: string | null;
  mode?: number;
  changed: boolean;
}

interface Change {
  action: "A" | "M" | "D";
  display: string;
  abs: string;
}

export async function applyPatch(ops: PatchOp[], ctx: ToolContext): Promise<Result<ToolOutput, ToolErrorCode>> {
  // 1. Every path the patch writes, checked before anything else happens.
  const keys = await checkTargets(ops, ctx);
  if ("error" in keys) return keys;
  const keyOf = (p: string) => keys.ok.get(resolveToolPath(ctx.cwd, p)) as string;

  // 2. New contents, in memory; later operations see the results of earlier ones.
  const plan: Plan = { state: new Map(), changes: [] };
  for (const op of ops) {
    const planned = await planOp(plan, op, keyOf);
    if ("error" in planned) return planned;
  }
  if (ctx.signal.aborted) return err("aborted", "apply_patch was cancelled before writing; no files were changed.");

  // 3. Write: all temp files first (a failure here changes nothing), then rename into place.
  const written = await commit(plan.state);
  if ("error" in written) return written;

  const summary = plan.changes.map((c) => `${c.action} ${c.display}`);
  return ok({
    text: `Success. Updated the following files:\n${summary.join("\n")}`,
    metadata: { changes: plan.changes.map((c) => ({ action: c.action, path: c.abs })) },
  });
}

/**
 * Checks that the sandbox lets the patch write every path it names (a move's destination too),
 * and maps each absolute path as written to its key: the path with symlink-free parent dirs. The
 * leaf is not resolved, so deleting a symlink removes the link; writes follow it (see commit).
 */
async function checkTargets(ops: PatchOp[], ctx: ToolContext): Promise<Result<Map<string, string>, ToolErrorCode>> {
  const keys = new Map<string, string>();
  for (const op of ops) {
    const targets = [op.path, ...(op.kind === "update" && op.movePath !== undefined ? [op.movePath] : [])];
    for (const t of targets) {
      const abs = resolveToolPath(ctx.cwd, t);
      if (keys.has(abs)) continue;
      const allowed = await checkWritable(abs, ctx.sandbox);
      if ("error" in allowed) return allowed;
      keys.set(abs, path.join(await realPathOfPossiblyMissing(path.dirname(abs)), path.basename(abs)));
    }
  }
  return ok(keys);
}

/** Every file's content once the patch is applied (by key), and the changes to report. */
interface Plan {
  state: Map<string, FileState>;
  changes: Change[];
}

/** Adds one operation's effect to `plan`, or says why it cannot be applied. */
async function planOp(plan: Plan, op: PatchOp, keyOf: (p: string) => string): Promise<Result<null, ToolErrorCode>> {
  const key = keyOf(op.path);
  if (op.kind === "add") {
    if (await isDirectory(key)) return failed(op.path, `cannot add ${op.path}: a directory with that name exists.`);
    plan.state.set(key, { content: op.contents, changed: true });
    plan.changes.push({ action: "A", display: op.path, abs: key });
    return ok(null);
  }
  const current = await currentState(plan.state, key, op.path, op.kind);
  if ("error" in current) return current;
  if (op.kind === "delete") {
    plan.state.set(key, { content: null, changed: true });
    plan.changes.push({ action: "D", display: op.path, abs: key });
    return ok(null);
  }
  const next = applyChunks(current.ok.content as string, op.chunks, op.path);
  if ("error" in next) return next;
  const mode = current.ok.mode;
  const updated: FileState = { content: next.ok, changed: true, ...(mode !== undefined ? { mode } : {}) };
  if (op.movePath === undefined) {
    plan.state.set(key, updated);
    plan.changes.push({ action: "M", display: op.path, abs: key });
    return ok(null);
  }
  const dest = keyOf(op.movePath);
  if (dest !== key) {
    if (await isDirectory(dest))
      return failed(op.path, `cannot move ${op.path} to ${op.movePath}: that is a directory.`);
    plan.state.set(key, { content: null, changed: true });
  }
  plan.state.set(dest, updated);
  plan.changes.push({ action: "M", display: op.movePath, abs: dest });
  return ok(null);
}

/** The file at `key` as the patch has left it so far, else as it is on disk (a text file). */
async function currentState(
  state: Map<string, FileState>,
  key: string,
  display: string,
  verb: "update" | "delete",
): Promise<Result<FileState, ToolErrorCode>> {
  const known = state.get(key);
  if (known) {
    if (known.content === null)
      return failed(display, `cannot ${verb} ${display}: an earlier part of this patch deleted or moved it.`);
    return ok(known);
  }
  try {
    const stat = await fs.stat(key);
    if (stat.isDirectory()) return failed(display, `cannot ${verb} ${display}: it is a directory.`);
    const bytes = await fs.readFile(key);
    if (bytes.includes(0)) return failed(display, `cannot ${verb} ${display}: it is a binary file.`);
    return ok({ content: bytes.toString("utf8"), mode: stat.mode & 0o7777, changed: false });
  } catch (e) {
    const code = fsErrorCode(e);
    if (code === "ENOENT" || code === "ENOTDIR") {
      const hint = verb === "update" ? ' Use "*** Add File:" to create it.' : "";
      return failed(display, `cannot ${verb} ${display}: the file does not exist.${hint}`);
    }
    return err("io_error", `Could not read ${display}: ${errorMessage(e)}. No files were changed.`);
  }
}

function failed(display: string, message: string): Result<never, ToolErrorCode> {
  return err("patch_failed", `Failed to apply the patch to ${display}: ${message}\nNo files were changed.`);
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function commit(state: Map<string, FileState>): Promise<Result<null, ToolErrorCode>> {
  const temps: { temp: string; target: string }[] = [];
  const removeTemps = () => Promise.all(temps.map((t) => fs.rm(t.temp, { force: true }).catch(() => {})));
  try {
    for (const [key, s] of state) {
      if (!s.changed || s.content === null) continue;
      const target = await realPathOfPossiblyMissing(key); // write through a symlink, do not replace it
      await fs.mkdir(path.dirname(target), { recursive: true });
      const temp = path.join(
        path.dirname(target),
        `.${path.basename(target)}.${process.pid}-${Math.random().toString(36).slice(2, 10)}.relay-patch`,
      );
      temps.push({ temp, target });
      await fs.writeFile(temp, s.content, { flag: "wx" });
      if (s.mode !== undefined) await fs.chmod(temp, s.mode);
    }
  } catch (e) {
    await removeTemps();
    return err("io_error", `Could not write the patched files: ${errorMessage(e)}. No files were changed.`);
  }
  const done: string[] = [];
  try {
    for (const t of temps) {
      await fs.rename(t.temp, t.target);
      done.push(t.target);
    }
    for (const [target, s] of state) {
      if (s.changed && s.content === null) {
        await fs.rm(target, { force: true });
        done.push(target);
      }
    }
  } catch (e) {
    await removeTemps();
    const partial =
      done.length > 0 ? ` These files were already changed: ${done.join(", ")}.` : " No files were changed.";
    return err("io_error", `Writing the patched files failed: ${errorMessage(e)}.${partial}`);
  }
  return ok(null);
}

// ---- hunk matching ----

/** New content of a file after its hunks, or a patch_failed error naming the lines not found. */
export function applyChunks(original: string, chunks: Chunk[], display: string): Result<string, ToolErrorCode> {
  const crlf = usesCrlf(original);
  const eol = crlf ? "\r\n" : "\n";
  const endsWithNewline = original === "" || original.endsWith("\n");
  const lines = original.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  if (crlf) for (let i = 0; i < lines.length; i++) lines[i] = (lines[i] as string).replace(/\r$/, "");

  const replacements: { start: number; remove: number; insert: string[] }[] = [];
  let cursor = 0;
  for (const [n, chunk] of chunks.entries()) {
    const where = `hunk ${n + 1} (patch line ${chunk.line})`;
    if (chunk.context !== undefined) {
      const at = seekSequence(lines, [chunk.context], cursor, false);
      if (at === undefined) {
        return failed(display, `${where}: could not find the line given after "@@":\n${chunk.context}\n${advice}`);
      }
      cursor = at + 1;
    }
    if (chunk.oldLines.length === 0) {
      // Pure insertion: after the "@@" context line when there is one, otherwise at the end.
      const start = chunk.context !== undefined && !chunk.endOfFile ? cursor : lines.length;
      replacements.push({ start, remove: 0, insert: chunk.newLines });
      cursor = start;
      continue;
    }
    let hunk = chunk.lines;
    let oldLines = chunk.oldLines;
    let at = seekSequence(lines, oldLines, cursor, chunk.endOfFile);
    const lastLine = hunk[hunk.length - 1];
    if (at === undefined && lastLine?.kind === " " && lastLine.text === "") {
      // A trailing blank context line often stands for the end of the file.
      hunk = hunk.slice(0, -1);
      oldLines = oldLines.slice(0, -1);
      at = seekSequence(lines, oldLines, cursor, chunk.endOfFile);
    }
    if (at === undefined) {
      const expected = chunk.oldLines.join("\n");
      return failed(
        display,
        `${where}: could not find these lines${cursor > 0 ? ` after line ${cursor}` : ""}:\n${expected}\n${advice}`,
      );
    }
    replacements.push({ start: at, remove: oldLines.length, insert: newLinesFor(hunk, lines, at) });
    cursor = at + oldLines.length;
  }

  for (let i = replacements.length - 1; i >= 0; i--) {
    const r = replacements[i] as (typeof replacements)[number];
    lines.splice(r.start, r.remove, ...r.insert);
  }
  if (lines.length === 0) return ok("");
  return ok(lines.join(eol) + (endsWithNewline ? eol : ""));
}

/** The hunk's new lines, with context lines taken from the file (they may differ in whitespace). */
function newLinesFor(hunk: HunkLine[], lines: string[], at: number): string[] {
  const out: string[] = [];
  let old = at;
  for (const h of hunk) {
    if (h.kind === "+") out.push(h.text);
    else {
      if (h.kind === " ") out.push(lines[old] as string);
      old++;
    }
  }
  return out;
}

const advice =
  'Hunks must reproduce the file\'s current lines exactly (context lines start with a space, removed lines with "-") and appear in file order. Read the file again and retry.';

function usesCrlf(text: string): boolean {
  const lf = text.split("\n").length - 1;
  if (lf === 0) return false;
  const crlf = text.split("\r\n").length - 1;
  return crlf * 2 > lf;
}

const PUNCTUATION: Record<string, string> = {
  "\u2010": "-",
  "\u2011": "-",
  "\u2012": "-",
  "\u2013": "-",
  "\u2014": "-",
  "\u2015": "-",
  "\u2212": "-",
  "\u2018": "'",
  "\u2019": "'",
  "\u201A": "'",
  "\u201B": "'",
  "\u201C": '"',
  "\u201D": '"',
  "\u201E": '"',
  "\u201F": '"',
  "\u00A0": " ",
  "\u2002": " ",
  "\u2003": " ",
  "\u2009": " ",
  "\u202F": " ",
};

function normalize(s: string): string {
  return s
    .trim()
    .replace(/[\u2010-\u2015\u2212\u2018-\u201F\u00A0\u2002\u2003\u2009\u202F]/g, (c) => PUNCTUATION[c] ?? c);
}

// Decreasing strictness: exact, then ignoring trailing whitespace, then surrounding whitespace,
// then also typographic punctuation (models sometimes emit curly quotes or en dashes).
const LEVELS: ((s: string) => string)[] = [(s) => s, (s) => s.trimEnd(), (s) => s.trim(), normalize];

/**
 * First index at or after `start` where `pattern` occurs in `lines`. With `eof`, a match that ends
 * at the last line is preferred.
 */
export function seekSequence(lines: string[], pattern: string[], start: number, eof: boolean): number | undefined {
  if (pattern.length === 0) return start;
  if (pattern.length > lines.length) return undefined;
  const last = lines.length - pattern.length;
  const matchesAt = (i: number, f: (s: string) => string) =>
    pattern.every((p, j) => f(lines[i + j] as string) === f(p));
  if (eof && last >= start) {
    for (const f of LEVELS) if (matchesAt(last, f)) return last;
  }
  for (const f of LEVELS) {
    for (let i = start; i <= last; i++) if (matchesAt(i, f)) return i;
  }
  return undefined;
}
