/** list_dir: a sorted, indented tree of a directory, one page at a time. */
import type { Dirent } from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { ToolErrorCode } from "../../contracts/executor.ts";
import { lazySchema } from "../../util/lazy-schema.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import * as prompts from "../prompts.generated.ts";
import { defineTool, type ToolOutput } from "../tool.ts";
import { type IgnoreScope, readVisible, scopeAbove, type VisibleDir } from "./gitignore.ts";
import { pageOutput } from "./paging.ts";
import { fsError, resolveToolPath, statPath } from "./paths.ts";

export const DEFAULT_LIST_LIMIT = 200;
export const DEFAULT_LIST_DEPTH = 2;
const INDENT = "  ";

const parameters = lazySchema(() =>
  z.object({
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
      .describe(
        `How many directory levels to descend; 1 lists only the directory itself. Defaults to ${DEFAULT_LIST_DEPTH}.`,
      ),
  }),
);

export const listDirTool = defineTool({
  name: "list_dir",
  description: prompts.LIST_DIR,
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
): Promise<Result<ToolOutput, ToolErrorCode>> {
  const stat = await statPath(abs, cwd);
  if ("error" in stat) return stat;
  if (!stat.ok.isDirectory()) {
    return err("not_a_directory", `${abs} is not a directory. Use read_file to read a file.`);
  }
  const listing = new Listing(offset, offset + limit - 1, depth, cwd, signal);
  const r = await listing.walk(abs, 0, await scopeAbove(abs));
  if (r !== "stop" && "error" in r) return r;
  return listOutput(abs, offset, depth, listing);
}

/** The entries of a tree in listing order, keeping those on the page and stopping one past it. */
class Listing {
  readonly lines: string[] = [];
  /** Entries passed so far, on the page or before it. */
  seen = 0;
  more = false;

  constructor(
    private readonly offset: number,
    private readonly lastWanted: number,
    private readonly depth: number,
    private readonly cwd: string,
    private readonly signal: AbortSignal,
  ) {}

  /** Depth-first so each directory's children follow it. */
  async walk(dir: string, level: number, outer: IgnoreScope): Promise<Result<null, ToolErrorCode> | "stop"> {
    if (this.signal.aborted) return err("aborted", "list_dir was cancelled.");
    let visible: VisibleDir;
    try {
      visible = await readVisible(dir, outer);
    } catch (e) {
      if (level === 0) return fsError(e, dir, this.cwd);
      this.add(`${INDENT.repeat(level)}[cannot list: ${errorMessage(e)}]`);
      return ok(null);
    }
    const entries = visible.entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (this.seen >= this.lastWanted) {
        this.more = true;
        return "stop";
      }
      this.add(`${INDENT.repeat(level)}${entry.name}${suffix(entry)}`);
      if (entry.isDirectory() && level + 1 < this.depth) {
        const r = await this.walk(path.join(dir, entry.name), level + 1, visible.scope);
        if (r === "stop" || "error" in r) return r;
      }
    }
    return ok(null);
  }

  private add(line: string): void {
    this.seen++;
    if (this.seen >= this.offset && this.seen <= this.lastWanted) this.lines.push(line);
  }
}

function listOutput(abs: string, offset: number, depth: number, listing: Listing): Result<ToolOutput, ToolErrorCode> {
  const { seen, more } = listing;
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
  return ok(
    pageOutput(
      { tool: "list_dir", unit: "entry", path: abs, offset, head: [header] },
      { lines: listing.lines, more, total: seen },
    ),
  );
}

function suffix(entry: Dirent): string {
  if (entry.isSymbolicLink()) return "@";
  if (entry.isDirectory()) return "/";
  if (entry.isFile()) return "";
  return "?";
}
