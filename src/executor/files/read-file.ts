/** read_file: numbered lines of a text file, one page at a time, streamed from disk. */
import { Buffer } from "node:buffer";
import fs from "node:fs/promises";
import { z } from "zod";
import { defineTool } from "../tool.ts";
import { err, ok, errorMessage, type Result } from "../../util/result.ts";
import { fsError, resolveToolPath } from "./paths.ts";

export const DEFAULT_READ_LIMIT = 2000;
export const MAX_LINE_CHARS = 500;
const CHUNK_BYTES = 64 * 1024;
const SNIFF_BYTES = 8 * 1024;
// A line longer than this many bytes holds at least MAX_LINE_CHARS characters (UTF-8 is <= 4 bytes).
const KEEP_LINE_BYTES = MAX_LINE_CHARS * 4;

const parameters = z.object({
  file_path: z.string().min(1).describe("Path of the file to read: absolute, or relative to the working directory."),
  offset: z
    .number()
    .int()
    .min(1)
    .default(1)
    .describe("1-based line number to start reading from. Defaults to 1."),
  limit: z
    .number()
    .int()
    .min(1)
    .default(DEFAULT_READ_LIMIT)
    .describe(`Maximum number of lines to return. Defaults to ${DEFAULT_READ_LIMIT}.`),
});

export const readFileTool = defineTool({
  name: "read_file",
  description:
    `Reads a text file and returns its lines prefixed with their line numbers ("L12: text"). ` +
    `Returns at most \`limit\` lines starting at line \`offset\`; when more lines remain, the last line of the ` +
    `output tells you which offset to use next. Lines longer than ${MAX_LINE_CHARS} characters are cut. ` +
    `Binary files and directories are refused (use list_dir for directories).`,
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
): Promise<Result<{ text: string; metadata: Record<string, unknown> }>> {
  let stat;
  try {
    stat = await fs.stat(abs);
  } catch (e) {
    return fsError(e, abs, cwd);
  }
  if (stat.isDirectory()) {
    return err("is_directory", `${abs} is a directory, not a file. Use list_dir to see its entries.`);
  }
  if (!stat.isFile()) return err("not_a_file", `${abs} is not a regular file (device, socket or pipe); it cannot be read.`);

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
        `${abs} is a binary file (${stat.size} bytes); read_file only shows text. Inspect it with a command-line tool instead.`,
      );
    }

    const lastWanted = offset + limit - 1;
    const out: string[] = [];
    let lineNo = 1; // number of the line the next byte belongs to
    let current: Collected | null = offset === 1 ? newLine(1) : null;
    let lineHasBytes = false;
    let moreAfterPage = false;
    let position = 0;

    reading: for (;;) {
      if (signal.aborted) return err("aborted", "read_file was cancelled.");
      const { bytesRead } = await handle.read(buf, 0, buf.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      let start = 0;
      while (start < bytesRead) {
        if (lineNo > lastWanted) {
          moreAfterPage = true;
          break reading;
        }
        const nl = buf.indexOf(10, start);
        const end = nl === -1 || nl >= bytesRead ? bytesRead : nl;
        if (current) keep(current, buf, start, end);
        lineHasBytes = true;
        if (end === bytesRead) break; // the line continues in the next chunk
        if (current) out.push(finish(current));
        lineNo++;
        lineHasBytes = false;
        current = lineNo >= offset && lineNo <= lastWanted ? newLine(lineNo) : null;
        start = end + 1;
      }
    }
    // A last line without a trailing newline still counts as a line.
    if (lineHasBytes && !moreAfterPage) {
      if (current) out.push(finish(current));
      lineNo++;
    }
    const totalLines = moreAfterPage ? undefined : lineNo - 1;

    if (totalLines !== undefined && offset > totalLines && !(offset === 1 && totalLines === 0)) {
      return err(
        "invalid_arguments",
        `offset ${offset} is past the end of ${abs}: the file has ${totalLines} line${totalLines === 1 ? "" : "s"}. Use an offset between 1 and ${Math.max(totalLines, 1)}.`,
      );
    }
    if (totalLines === 0) {
      return ok({ text: "(empty file)", metadata: { path: abs, start_line: 0, end_line: 0, more: false } });
    }
    const endLine = offset + out.length - 1;
    if (moreAfterPage) {
      out.push(`[More lines remain after line ${endLine}. To continue, call read_file with offset=${endLine + 1}.]`);
    }
    return ok({
      text: out.join("\n"),
      metadata: {
        path: abs,
        start_line: offset,
        end_line: endLine,
        more: moreAfterPage,
        ...(moreAfterPage ? { next_offset: endLine + 1 } : { total_lines: totalLines }),
      },
    });
  } finally {
    await handle.close();
  }
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
