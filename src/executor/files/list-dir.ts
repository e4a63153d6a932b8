/** list_dir: a sorted, indented tree of a directory, one page at a time. */
import fs from "node:fs/promises";
import type { Dirent } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { defineTool } from "../tool.ts";
import { err, ok, errorMessage, type Result } from "../../util/result.ts";
import { fsError, resolveToolPath } from "./paths.ts";

export const DEFAULT_LIST_LIMIT = 200;
export const DEFAULT_LIST_DEPTH = 2;
const INDENT = "  ";

const parameters = z.object({
  dir_path: z.string().min(1).describe("Directory to list: absolute, or relative to the working directory."),
  offset: z.number().int().min(1).default(1).describe("1-based number of the first entry to return. Defaults to 1."),
  limit: z
    .number()
    .int()
    .min(1)
    .default(DEFAULT_LIST_LIMIT)
    .describe(`Maximum number of entries to return. Defaults to ${DEFAULT_LIST_LIMIT}.`),
  depth: z
    .number()
    .int()
    .min(1)
    .default(DEFAULT_LIST_DEPTH)
    .describe(`How many directory levels to descend; 1 lists only the directory itself. Defaults to ${DEFAULT_LIST_DEPTH}.`),
});

export const listDirTool = defineTool({
  name: "list_dir",
  description:
    "Lists a directory as a tree: entries sorted by name, indented two spaces per level, directories " +
    "ending in `/` and symbolic links (never followed) in `@`. Returns at most `limit` entries starting at " +
    "entry `offset`; when more remain, the last line tells you which offset to use next.",
  parameters,
  readOnly: true,
  async execute(args, ctx) {
    const abs = resolveToolPath(ctx.cwd, args.dir_path);
    try {
      return await listPage(abs, args.offset, args.limit, args.depth, ctx.cwd, ctx.signal);
    } catch (e) {
      return err("io_error", `Could not list ${abs}: ${errorMessage(e)}`);
    }
  },
});

async function listPage(
  abs: string,
  offset: number,
  limit: number,
  depth: number,
  cwd: string,
  signal: AbortSignal,
): Promise<Result<{ text: string; metadata: Record<string, unknown> }>> {
  let stat;
  try {
    stat = await fs.stat(abs);
  } catch (e) {
    return fsError(e, abs, cwd);
  }
  if (!stat.isDirectory()) {
    return err("not_a_directory", `${abs} is not a directory. Use read_file to read a file.`);
  }

  const lastWanted = offset + limit - 1;
  const lines: string[] = [];
  let seen = 0;
  let more = false;

  // Depth-first so each directory's children follow it; stops one entry past the page.
  const walk = async (dir: string, level: number): Promise<Result<null> | "stop"> => {
    if (signal.aborted) return err("aborted", "list_dir was cancelled.");
    let entries: Dirent[];
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (level === 0) return fsError(e, dir, cwd);
      addLine(`${INDENT.repeat(level)}[cannot list: ${errorMessage(e)}]`);
      return ok(null);
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (seen >= lastWanted) {
        more = true;
        return "stop";
      }
      addLine(`${INDENT.repeat(level)}${entry.name}${suffix(entry)}`);
      if (entry.isDirectory() && level + 1 < depth) {
        const r = await walk(path.join(dir, entry.name), level + 1);
        if (r === "stop" || "error" in r) return r;
      }
    }
    return ok(null);
  };
  const addLine = (line: string) => {
    seen++;
    if (seen >= offset && seen <= lastWanted) lines.push(line);
  };

  const r = await walk(abs, 0);
  if (r !== "stop" && "error" in r) return r;

  const header = `Absolute path: ${abs}`;
  if (seen === 0) {
    if (offset > 1) return err("invalid_arguments", `offset ${offset} is past the end: ${abs} is empty.`);
    return ok({ text: `${header}\n(empty directory)`, metadata: { path: abs, entries: 0, more: false } });
  }
  if (!more && offset > seen) {
    return err(
      "invalid_arguments",
      `offset ${offset} is past the end of the listing of ${abs}: it has ${seen} entr${seen === 1 ? "y" : "ies"} at depth ${depth}. Use an offset between 1 and ${seen}.`,
    );
  }
  const endEntry = offset + lines.length - 1;
  const out = [header, ...lines];
  if (more) out.push(`[More entries remain after entry ${endEntry}. To continue, call list_dir with offset=${endEntry + 1}.]`);
  return ok({
    text: out.join("\n"),
    metadata: {
      path: abs,
      start_entry: offset,
      end_entry: endEntry,
      more,
      ...(more ? { next_offset: endEntry + 1 } : { total_entries: seen }),
    },
  });
}

function suffix(entry: Dirent): string {
  if (entry.isSymbolicLink()) return "@";
  if (entry.isDirectory()) return "/";
  if (entry.isFile()) return "";
  return "?";
}
