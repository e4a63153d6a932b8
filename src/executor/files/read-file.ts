/** read_file: numbered lines of a text file, one page at a time, streamed from disk. */
import { Buffer } from "node:buffer";
import fs, { type FileHandle } from "node:fs/promises";
import { z } from "zod";
import { DEFAULT_READ_LIMIT } from "../../contracts/exec-tools.ts";
import type { ToolErrorCode } from "../../contracts/executor.ts";
import { lazySchema } from "../../util/lazy-schema.ts";
import { fillPrompt } from "../../util/prompt-template.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import * as prompts from "../prompts.generated.ts";
import { defineTool, type ToolOutput } from "../tool.ts";
import { type Page, pageOutput } from "./paging.ts";
import { fsError, resolveToolPath, statPath } from "./paths.ts";

export const MAX_LINE_CHARS = 500;
const CHUNK_BYTES = 64 * 1024;
const SNIFF_BYTES = 8 * 1024;
// A line longer than this many bytes holds at least MAX_LINE_CHARS characters (UTF-8 is <= 4 bytes).
const KEEP_LINE_BYTES = MAX_LINE_CHARS * 4;

const parameters = lazySchema(() =>
  z.object({
    file_path: z.string().min(1).describe("Path of the file to read: absolute, or relative to the working directory."),
    offset: z.number().int().min(1).default(1).describe("1-based line number to start reading from. Defaults to 1."),
    limit: z
      .number()
      .int()
      .min(1)
      .default(DEFAULT_READ_LIMIT)
      .describe(`Maximum number of lines to return. Defaults to ${DEFAULT_READ_LIMIT}.`),
  }),
);

export const readFileTool = defineTool({
  name: "read_file",
  description: fillPrompt(prompts.READ_FILE, { max_line_chars: MAX_LINE_CHARS }),
  parameters,
  readOnly: true,
  async execute(args, ctx) {
    const abs = resolveToolPath(ctx.cwd, args.file_path);
    try {
      return await readPage(abs, args.offset, args.limit, ctx.cwd, ctx.signal);
    } catch (e) {
      return err("io_error", `Could not read ${abs}: ${errorMessage(e)}`);
    }
  },
});

interface Collected {
  lineNo: number;
  parts: Uint8Array[];
  keptBytes: number;
  totalBytes: number;
}

async function readPage(
  abs: string,
  offset: number,
  limit: number,
  cwd: string,
  signal: AbortSignal,
): Promise<Result<ToolOutput, ToolErrorCode>> {
  const stat = await statPath(abs, cwd);
  if ("error" in stat) return stat;
  if (stat.ok.isDirectory()) {
    return err("is_directory", `${abs} is a directory, not a file. Use list_dir to see its entries.`);
  }
  if (!stat.ok.isFile())
    return err("not_a_file", `${abs} is not a regular file (device, socket or pipe); it cannot be read.`);

  let handle;
  try {
    handle = await fs.open(abs, "r");
  } catch (e) {
    return fsError(e, abs, cwd);
  }
  try {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    const sniff = await handle.read(buf, 0, Math.min(SNIFF_BYTES, buf.length), 0);
    if (buf.subarray(0, sniff.bytesRead).includes(0)) {
      return err(
        "binary_file",
        `${abs} is a binary file (${stat.ok.size} bytes); read_file only shows text. Inspect it with a command-line tool instead.`,
      );
    }
    const page = await scanPage(handle, buf, offset, limit, signal);
    if ("error" in page) return page;
    return lineOutput(abs, offset, page.ok);
  } finally {
    await handle.close();
  }
}

/** Where a scan through the file is: the line the next byte belongs to and the page so far. */
interface Scan {
  readonly offset: number;
  readonly lastWanted: number;
  readonly out: string[];
  lineNo: number;
  /** The line being collected, when it is on the page. */
  current: Collected | null;
  lineHasBytes: boolean;
}

/** Reads chunk after chunk until the line after the page (or the end of the file). */
async function scanPage(
  handle: FileHandle,
  buf: Buffer,
  offset: number,
  limit: number,
  signal: AbortSignal,
): Promise<Result<Page, ToolErrorCode>> {
  const scan: Scan = {
    offset,
    lastWanted: offset + limit - 1,
    out: [],
    lineNo: 1,
    current: offset === 1 ? newLine(1) : null,
    lineHasBytes: false,
  };
  let position = 0;
  for (;;) {
    if (signal.aborted) return err("aborted", "read_file was cancelled.");
    const { bytesRead } = await handle.read(buf, 0, buf.length, position);
    if (bytesRead === 0) break;
    position += bytesRead;
    if (!feed(scan, buf, bytesRead)) return ok({ lines: scan.out, more: true, total: scan.lineNo - 1 });
  }
  // A last line without a trailing newline still counts as a line.
  if (scan.lineHasBytes) {
    if (scan.current) scan.out.push(finish(scan.current));
    scan.lineNo++;
  }
  return ok({ lines: scan.out, more: false, total: scan.lineNo - 1 });
}

/** Splits one chunk into lines; false once a byte of the line after the page is reached. */
function feed(scan: Scan, buf: Buffer, bytesRead: number): boolean {
  let start = 0;
  while (start < bytesRead) {
    if (scan.lineNo > scan.lastWanted) return false;
    const nl = buf.indexOf(10, start);
    const end = nl === -1 || nl >= bytesRead ? bytesRead : nl;
    if (scan.current) keep(scan.current, buf, start, end);
    scan.lineHasBytes = true;
    if (end === bytesRead) break; // the line continues in the next chunk
    if (scan.current) scan.out.push(finish(scan.current));
    scan.lineNo++;
    scan.lineHasBytes = false;
    scan.current = scan.lineNo >= scan.offset && scan.lineNo <= scan.lastWanted ? newLine(scan.lineNo) : null;
    start = end + 1;
  }
  return true;
}

function lineOutput(abs: string, offset: number, page: Page): Result<ToolOutput, ToolErrorCode> {
  const total = page.total;
  if (!page.more && offset > total && !(offset === 1 && total === 0)) {
    return err(
      "invalid_arguments",
      `offset ${offset} is past the end of ${abs}: the file has ${total} line${total === 1 ? "" : "s"}. Use an offset between 1 and ${Math.max(total, 1)}.`,
    );
  }
  if (!page.more && total === 0) {
    return ok({ text: "(empty file)", metadata: { path: abs, start_line: 0, end_line: 0, more: false } });
  }
  return ok(pageOutput({ tool: "read_file", unit: "line", path: abs, offset, head: [] }, page));
}

function newLine(lineNo: number): Collected {
  return { lineNo, parts: [], keptBytes: 0, totalBytes: 0 };
}

/** Copies at most KEEP_LINE_BYTES of a line (the read buffer is reused) and counts the rest. */
function keep(line: Collected, buf: Uint8Array, start: number, end: number): void {
  line.totalBytes += end - start;
  const room = KEEP_LINE_BYTES - line.keptBytes;
  if (room <= 0 || end <= start) return;
  const take = Math.min(room, end - start);
  line.parts.push(new Uint8Array(buf.subarray(start, start + take))); // a copy, not a view
  line.keptBytes += take;
}

const decoder = new TextDecoder("utf-8");

function finish(line: Collected): string {
  const bytes = new Uint8Array(line.keptBytes);
  let at = 0;
  for (const p of line.parts) {
    bytes.set(p, at);
    at += p.length;
  }
  let text = decoder.decode(bytes);
  const complete = line.totalBytes === line.keptBytes;
  if (complete && text.endsWith("\r")) text = text.slice(0, -1);
  if (!complete || text.length > MAX_LINE_CHARS) {
    text = `${text.slice(0, MAX_LINE_CHARS)} [line cut at ${MAX_LINE_CHARS} characters; it is ${line.totalBytes} bytes long]`;
  }
  return `L${line.lineNo}: ${text}`;
}
