/**
 * The .gitignore files of a workspace, applied the way ripgrep applies them by default: only
 * inside a git repository (a directory holding `.git`), the files from the repository's top down
 * to each directory a walk enters, the deepest file with a rule for a path deciding (so a nested
 * `!keep.log` re-includes what the root ignores); a nested repository does not see the files
 * above its top. The directory a walk starts at is entered even when it is ignored, but what lies
 * below it is still judged by its own path.
 * Not read (ripgrep reads them): .ignore, .rgignore, .git/info/exclude, the global excludes file.
 */
import type { Dirent } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import ignore, { type Ignore } from "ignore";
import { toPosix } from "./paths.ts";

/** Git matches case-sensitively unless core.ignorecase says otherwise, and so does ripgrep. */
const OPTIONS = { ignorecase: false };

interface Level {
  /** The directory of the .gitignore; its rules match paths relative to it. */
  dir: string;
  rules: Ignore;
}

/** The .gitignore rules in force in one directory of a walk. */
export interface IgnoreScope {
  /** Inside a git repository; outside one no .gitignore counts. */
  readonly inRepo: boolean;
  /** One per .gitignore from the repository's top down to the directory, shallowest first. */
  readonly levels: readonly Level[];
}

const OUTSIDE: IgnoreScope = { inRepo: false, levels: [] };

/** The scope a walk starting at `root` begins in: the .gitignore files above root in its repository. */
export async function scopeAbove(root: string): Promise<IgnoreScope> {
  const top = await repositoryTop(root);
  if (top === undefined || top === root) return OUTSIDE;
  let scope = OUTSIDE;
  const between = path.relative(top, path.dirname(root));
  let dir = top;
  for (const part of ["", ...(between === "" ? [] : between.split(path.sep))]) {
    dir = path.join(dir, part);
    scope = await enter(scope, dir, await markersAt(dir));
  }
  return scope;
}

export interface VisibleDir {
  /** The entries no .gitignore rule ignores. */
  entries: Dirent[];
  /** The scope inside the directory, for its subdirectories. */
  scope: IgnoreScope;
}

/** Reads a directory the walk enters (throwing as readdir does) without what .gitignore ignores. */
export async function readVisible(dir: string, outer: IgnoreScope): Promise<VisibleDir> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const scope = await enter(outer, dir, markersIn(entries));
  if (scope.levels.length === 0) return { entries, scope };
  return { entries: entries.filter((e) => !isIgnored(scope, path.join(dir, e.name), e.isDirectory())), scope };
}

function isIgnored(scope: IgnoreScope, abs: string, isDir: boolean): boolean {
  for (let i = scope.levels.length - 1; i >= 0; i--) {
    const level = scope.levels[i] as Level;
    const verdict = level.rules.test(`${toPosix(path.relative(level.dir, abs))}${isDir ? "/" : ""}`);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

interface Markers {
  git: boolean;
  gitignore: boolean;
}

function markersIn(entries: Dirent[]): Markers {
  return {
    git: entries.some((e) => e.name === ".git"),
    gitignore: entries.some((e) => e.name === ".gitignore" && !e.isDirectory()),
  };
}

async function markersAt(dir: string): Promise<Markers> {
  const [git, gitignore] = await Promise.all([exists(path.join(dir, ".git")), exists(path.join(dir, ".gitignore"))]);
  return { git, gitignore };
}

async function enter(outer: IgnoreScope, dir: string, has: Markers): Promise<IgnoreScope> {
  if (!outer.inRepo && !has.git) return OUTSIDE;
  // A nested repository starts afresh: the .gitignore files above its top do not reach into it.
  const levels = has.git ? [] : outer.levels.map((level) => admit(level, dir));
  const rules = has.gitignore ? await readRules(path.join(dir, ".gitignore")) : undefined;
  if (rules) levels.push({ dir, rules });
  return { inRepo: true, levels };
}

/**
 * The level as it applies below `dir`, which the walk entered. When its rules ignore `dir` (the
 * walk starts there, or a deeper .gitignore re-included it), the ignore package would ignore
 * everything below with it; a negation of `dir` itself, added last so that it wins, leaves each
 * path below to be judged on its own, as ripgrep judges it.
 */
function admit(level: Level, dir: string): Level {
  const rel = toPosix(path.relative(level.dir, dir));
  if (rel === "" || !level.rules.test(`${rel}/`).ignored) return level;
  const negation = `!/${rel.replace(/[\\*?[\] ]/g, "\\$&")}/`;
  return { dir: level.dir, rules: ignore(OPTIONS).add(level.rules).add({ pattern: negation }) };
}

async function readRules(file: string): Promise<Ignore | undefined> {
  try {
    return ignore(OPTIONS).add(await fs.readFile(file, "utf8"));
  } catch {
    return undefined; // unreadable (or gone): like ripgrep, search as if it were not there
  }
}

/** The nearest directory at or above `dir` that holds `.git` (a directory, or a worktree's file). */
async function repositoryTop(dir: string): Promise<string | undefined> {
  for (let current = dir; ; current = path.dirname(current)) {
    if (await exists(path.join(current, ".git"))) return current;
    if (path.dirname(current) === current) return undefined;
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch {
    return false;
  }
}
