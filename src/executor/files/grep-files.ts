/** grep_files: which files contain a regular expression, newest first. Pure TypeScript, no ripgrep. */
import fs from "node:fs/promises";
import path from "node:path";
import picomatch from "picomatch";
import { z } from "zod";
import type { ToolErrorCode } from "../../contracts/executor.ts";
import { lazySchema } from "../../util/lazy-schema.ts";
import { fillPrompt } from "../../util/prompt-template.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import * as prompts from "../prompts.generated.ts";
import { defineTool, type ToolOutput } from "../tool.ts";
import { type IgnoreScope, readVisible, scopeAbove, type VisibleDir } from "./gitignore.ts";
import { resolveToolPath, statPath, toPosix } from "./paths.ts";

export const DEFAULT_GREP_LIMIT = 100;
export const MAX_SCANNED_FILES = 20_000;
export const MAX_GREP_FILE_BYTES = 10 * 1024 * 1024;
const SKIPPED_DIRS = new Set([".git", "node_modules"]);
const CONCURRENCY = 16;

const parameters = lazySchema(() =>
  z.object({
    pattern: z
      .string()
      .min(1)
      .describe("JavaScript regular expression searched for in file contents, e.g. `function\\s+main` or `(?i)todo`."),
    include: z
      .string()
      .optional()
      .describe(
        'Only search files matching this glob: "*.ts" or "*.{ts,tsx}" match file names, "src/**/*.ts" paths relative to `path`. Files .gitignore ignores stay skipped.',
      ),
    path: z
      .string()
      .optional()
      .describe(
        "Directory (or single file) to search: absolute, or relative to the working directory. Defaults to the working directory.",
      ),
    limit: z
      .number()
      .int()
      .min(1)
      .max(2000)
      .default(DEFAULT_GREP_LIMIT)
      .describe(`Maximum number of file paths to return. Defaults to ${DEFAULT_GREP_LIMIT}.`),
  }),
);

export interface GrepLimits {
  /** Files the walk visits before it stops. */
  maxFiles: number;
  /** Larger files are skipped (and counted in the output). */
  maxFileBytes: number;
}

export const DEFAULT_GREP_LIMITS: GrepLimits = { maxFiles: MAX_SCANNED_FILES, maxFileBytes: MAX_GREP_FILE_BYTES };

/** The tool with its walk limits; tests use small ones. */
export function createGrepFilesTool(limits: GrepLimits = DEFAULT_GREP_LIMITS) {
  return defineTool({
    name: "grep_files",
    description: fillPrompt(prompts.GREP_FILES, { max_file_size: formatBytes(limits.maxFileBytes) }),
    parameters,
    readOnly: true,
    async execute(args, ctx) {
      const re = compilePattern(args.pattern);
      if ("error" in re) return re;
      let glob: Glob | undefined;
      if (args.include !== undefined && args.include.trim() !== "") {
        try {
          glob = compileGlob(args.include);
        } catch (e) {
          return err(
            "invalid_arguments",
            `include ${JSON.stringify(args.include)} is not a usable glob: ${globProblem(e)}`,
          );
        }
      }
      const root = resolveToolPath(ctx.cwd, args.path ?? ".");
      try {
        return await grep({ root, re: re.ok, glob, limit: args.limit, limits, signal: ctx.signal }, ctx.cwd);
      } catch (e) {
        return err("io_error", `grep_files failed in ${root}: ${errorMessage(e)}`);
      }
    },
  });
}

export const grepFilesTool = createGrepFilesTool();

/** Compiles with the `u` flag when the pattern allows it; accepts a leading `(?i)` as ripgrep does. */
export function compilePattern(pattern: string): Result<RegExp, ToolErrorCode> {
  let source = pattern;
  let flags = "m";
  if (source.startsWith("(?i)")) {
    source = source.slice(4);
    flags += "i";
  }
  try {
    return ok(new RegExp(source, `${flags}u`));
  } catch {
    try {
      return ok(new RegExp(source, flags));
    } catch (e) {
      return err(
        "invalid_arguments",
        `pattern ${JSON.stringify(pattern)} is not a valid JavaScript regular expression: ${errorMessage(e)}. Escape special characters such as ( [ { . * + ? with a backslash to match them literally.`,
      );
    }
  }
}

interface Search {
  root: string;
  re: RegExp;
  glob: Glob | undefined;
  /** File paths returned at most. */
  limit: number;
  limits: GrepLimits;
  signal: AbortSignal;
}

const aborted = () => err("aborted", "grep_files was cancelled.");

async function grep(search: Search, cwd: string): Promise<Result<ToolOutput, ToolErrorCode>> {
  const stat = await statPath(search.root, cwd);
  if ("error" in stat) return stat;
  let walked: Result<Walked, ToolErrorCode>;
  if (stat.ok.isDirectory()) walked = await walkFiles(search);
  else if (stat.ok.isFile()) walked = ok({ files: [search.root], visited: 0, capped: false });
  else return err("not_a_directory", `${search.root} is neither a directory nor a regular file.`);
  if ("error" in walked) return walked;
  const searched = await searchAll(walked.ok.files, search);
  if (search.signal.aborted) return aborted();
  return ok(grepOutput(search, walked.ok, searched));
}

interface Walked {
  /** The files to search: those the walk found that `include` keeps. */
  files: string[];
  /** Files seen by the walk, whether or not `include` keeps them. */
  visited: number;
  /** True when the walk stopped at `maxFiles`. */
  capped: boolean;
}

async function walkFiles(search: Search): Promise<Result<Walked, ToolErrorCode>> {
  const { root, glob, limits, signal } = search;
  const walked: Walked = { files: [], visited: 0, capped: false };
  const stack = [{ dir: root, outer: await scopeAbove(root) }];
  while (stack.length > 0) {
    if (signal.aborted) return aborted();
    const { dir, outer } = stack.pop() as { dir: string; outer: IgnoreScope };
    let visible: VisibleDir;
    try {
      visible = await readVisible(dir, outer);
    } catch {
      continue; // unreadable subdirectory: skip it like ripgrep does
    }
    for (const entry of visible.entries) {
      const abs = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) stack.push({ dir: abs, outer: visible.scope });
      } else if (entry.isFile()) {
        if (walked.visited >= limits.maxFiles) {
          walked.capped = true;
          return ok(walked);
        }
        walked.visited++;
        if (!glob || glob.test(toPosix(path.relative(root, abs)))) walked.files.push(abs);
      }
    }
  }
  return ok(walked);
}

interface Searched {
  matches: { abs: string; mtimeMs: number }[];
  skippedLarge: number;
}

/** Searches the files CONCURRENCY at a time; stops early (with what it has) on abort. */
async function searchAll(files: string[], search: Search): Promise<Searched> {
  const searched: Searched = { matches: [], skippedLarge: 0 };
  let next = 0;
  const worker = async () => {
    while (next < files.length && !search.signal.aborted) {
      const abs = files[next++] as string;
      const hit = await searchFile(abs, search.re, search.limits.maxFileBytes);
      if (hit === "large") searched.skippedLarge++;
      else if (hit) searched.matches.push({ abs, mtimeMs: hit.mtimeMs });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return searched;
}

function grepOutput(search: Search, walked: Walked, searched: Searched): ToolOutput {
  const { root, limit, limits } = search;
  const { matches, skippedLarge } = searched;
  matches.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.abs < b.abs ? -1 : a.abs > b.abs ? 1 : 0));
  const shown = matches.slice(0, limit);
  const lines = shown.map((m) => m.abs);
  if (matches.length === 0) lines.push(`No files under ${root} matched ${search.re.source}.`);
  if (matches.length > limit) {
    lines.push(
      `[${matches.length - limit} more matching files not shown; raise limit or narrow the search with path or include.]`,
    );
  }
  if (walked.capped) {
    lines.push(
      `[Stopped after walking ${limits.maxFiles} files; results are incomplete. Narrow the search with path.]`,
    );
  }
  if (skippedLarge > 0) lines.push(`[Skipped ${skippedLarge} files larger than ${formatBytes(limits.maxFileBytes)}.]`);
  return {
    text: lines.join("\n"),
    metadata: {
      root,
      matches: matches.length,
      returned: shown.length,
      visited_files: walked.visited,
      scanned_files: walked.files.length,
      capped: walked.capped,
      skipped_large: skippedLarge,
    },
  };
}

async function searchFile(abs: string, re: RegExp, maxBytes: number): Promise<{ mtimeMs: number } | "large" | null> {
  try {
    const stat = await fs.stat(abs);
    if (stat.size > maxBytes) return "large";
    const bytes = await fs.readFile(abs);
    if (bytes.includes(0)) return null;
    return re.test(bytes.toString("utf8")) ? { mtimeMs: stat.mtimeMs } : null;
  } catch {
    return null; // vanished or unreadable: not a match
  }
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

/** An include glob, matched by picomatch. */
export interface Glob {
  /** True when the glob names directories, so it is matched against the relative path. */
  readonly matchesPath: boolean;
  test(relativePosixPath: string): boolean;
}

/**
 * `*` also matches names starting with a dot, `[!ch]` is a negated class as in the shell, an
 * unclosed `[` or `{` is an error (as in ripgrep) and so is a class picomatch cannot compile;
 * paths are matched with `/` on every platform.
 */
const GLOB_OPTIONS: picomatch.PicomatchOptions = {
  dot: true,
  posix: true,
  strictBrackets: true,
  debug: true,
  windows: false,
};

/** Throws when picomatch cannot use the glob; `globProblem` words the error for the model. */
export function compileGlob(glob: string): Glob {
  // Backslashes escape (`\*` is a literal star), except on Windows where they separate directories.
  const slashed = path.sep === "\\" ? glob.trim().replace(/\\/g, "/") : glob.trim();
  const cleaned = slashed.replace(/^\.\//, "");
  const matchesPath = cleaned.includes("/");
  const isMatch = picomatch(cleaned, GLOB_OPTIONS);
  return {
    matchesPath,
    test(rel) {
      if (matchesPath) return isMatch(rel);
      const slash = rel.lastIndexOf("/");
      return isMatch(slash === -1 ? rel : rel.slice(slash + 1));
    },
  };
}

function globProblem(e: unknown): string {
  const unbalanced = /^Missing (opening|closing): "(.)"/.exec(errorMessage(e));
  // V8 quotes picomatch's regular expression in its message; the model never wrote it.
  if (!unbalanced) return `${errorMessage(e).replace(/: \/.*\/[a-z]*: /, ": ")}.`;
  const [, side, char] = unbalanced;
  const what =
    side === "closing" ? `a "${OPENER[char as string] ?? "?"}" is never closed` : `a "${char}" closes nothing`;
  return `${what}. Balance the brackets and braces, or put a backslash before one to match it literally.`;
}

const OPENER: Record<string, string> = { "]": "[", "}": "{", ")": "(" };
