/** Listing rollouts newest-first and resolving `last`, a session id, an id prefix or a path. */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { sessionsDir } from "../home/home.ts";
import { err, ok, type Result } from "../util/result.ts";
import { readSessionMeta } from "./reader.ts";
import { isRoleSession } from "./schema.ts";

export interface RolloutFile {
  path: string;
  /** Session (thread) id, from the filename. */
  id: string;
  /** Creation time from the filename (local time, second precision). */
  createdAt: Date;
}

const FILE_RE =
  /^rollout-(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$/;

export function parseRolloutFilename(file: string): Omit<RolloutFile, "path"> | undefined {
  const m = FILE_RE.exec(path.basename(file));
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  return { id: m[7]!.toLowerCase(), createdAt: new Date(y, mo - 1, d, h, mi, s) };
}

async function subdirs(dir: string, re: RegExp): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && re.test(e.name))
      .map((e) => e.name)
      .sort()
      .reverse();
  } catch {
    return [];
  }
}

/**
 * Rollouts under `<home>/sessions/YYYY/MM/DD`, newest first (by filename: timestamp, then the
 * time-ordered id). Stops walking once `limit` files are found. A missing directory is empty.
 */
export async function listRollouts(home: string, opts: { limit?: number } = {}): Promise<RolloutFile[]> {
  const limit = opts.limit ?? Infinity;
  const out: RolloutFile[] = [];
  for await (const f of walkRollouts(home)) {
    out.push(f);
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * `listRollouts` one file at a time: only the names of the day directory being walked are held,
 * so a caller that stops or pages through them holds no list of every rollout.
 */
export async function* walkRollouts(home: string): AsyncGenerator<RolloutFile> {
  const root = sessionsDir(home);
  for (const y of await subdirs(root, /^\d{4}$/)) {
    for (const m of await subdirs(path.join(root, y), /^\d{2}$/)) {
      for (const d of await subdirs(path.join(root, y, m), /^\d{2}$/)) {
        const dir = path.join(root, y, m, d);
        let names: string[];
        try {
          names = await readdir(dir);
        } catch {
          continue;
        }
        for (const name of names
          .filter((n) => FILE_RE.test(n))
          .sort()
          .reverse())
          yield { path: path.join(dir, name), ...parseRolloutFilename(name)! };
      }
    }
  }
}

/**
 * `last`: the newest session that is not an infty run's role (those belong to their run). A
 * file whose head cannot be read still counts, so that resuming it says what is wrong with it.
 */
async function newestOwnSession(home: string): Promise<RolloutFile | undefined> {
  for await (const f of walkRollouts(home)) {
    const meta = await readSessionMeta(f.path);
    if ("error" in meta || !isRoleSession(meta.ok)) return f;
  }
  return undefined;
}

const MIN_PREFIX = 8;

function describe(files: RolloutFile[]): string {
  return files.map((f) => `  ${f.id}  ${f.createdAt.toLocaleString()}  ${f.path}`).join("\n");
}

/**
 * Resolves `last` (the newest session that is not an infty run's role), a full session id, a unique id prefix of at least 8
 * characters, or a path to a rollout file. `listHint` (e.g. a CLI command) is added to
 * not-found messages.
 */
export async function findRollout(
  home: string,
  idOrLast: string,
  opts: { listHint?: string } = {},
): Promise<Result<RolloutFile>> {
  const q = idOrLast.trim();
  const hint = opts.listHint ? ` (list sessions with ${opts.listHint})` : "";
  const dir = sessionsDir(home);
  if (q === "last") {
    const newest = await newestOwnSession(home);
    if (!newest)
      return err(
        "session_not_found",
        `there are no sessions in ${dir} yet (infty runs' role sessions do not count: relay infty list shows the runs)`,
        { dir },
      );
    return ok(newest);
  }
  if (q.endsWith(".jsonl") || q.includes("/") || q.includes(path.sep)) return fromPath(q);
  if (!/^[0-9a-fA-F-]+$/.test(q)) {
    return err(
      "session_bad_id",
      `"${q}" is not a session id: use "last", a session id (or at least ${MIN_PREFIX} of its first characters), or a rollout path${hint}`,
    );
  }
  if (q.length < MIN_PREFIX) {
    return err(
      "session_bad_id",
      `session id prefix "${q}" is too short: give at least ${MIN_PREFIX} characters${hint}`,
    );
  }
  const prefix = q.toLowerCase();
  const all = await listRollouts(home);
  const matches = all.filter((f) => f.id.startsWith(prefix));
  if (matches.length === 1) return ok(matches[0]!);
  if (matches.length > 1) {
    const shown = matches.slice(0, 10);
    const more = matches.length > shown.length ? `\n  ... and ${matches.length - shown.length} more` : "";
    return err(
      "session_ambiguous",
      `"${q}" matches ${matches.length} sessions; give more characters of the id:\n${describe(shown)}${more}`,
      { candidates: matches },
    );
  }
  const recent = all.slice(0, 5);
  const listing = recent.length
    ? `; the newest sessions are:\n${describe(recent)}`
    : `; there are no sessions in ${dir} yet`;
  return err("session_not_found", `no session id starts with "${q}"${hint}${listing}`, { dir });
}

async function fromPath(p: string): Promise<Result<RolloutFile>> {
  const abs = path.resolve(p);
  try {
    const st = await stat(abs);
    if (!st.isFile()) return err("session_not_found", `${abs} is not a file`);
  } catch {
    return err("session_not_found", `rollout ${abs} does not exist`);
  }
  const fromName = parseRolloutFilename(abs);
  if (fromName) return ok({ path: abs, ...fromName });
  const meta = await readSessionMeta(abs);
  if ("error" in meta) return meta;
  const ts = new Date(meta.ok.timestamp);
  return ok({ path: abs, id: meta.ok.id, createdAt: Number.isNaN(ts.getTime()) ? new Date(0) : ts });
}
