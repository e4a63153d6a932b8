/**
 * The named Unix sockets a sandboxed command without network must not reach. Landlock does not
 * govern connect() to a named socket and seccomp cannot read the path, so each such socket is
 * covered with /dev/null in the command's own mount namespace (connect then fails with
 * ECONNREFUSED). Hidden: every socket bound outside the writable roots (a Docker daemon's is root
 * on the host), and those in the temp dirs that were already bound when this executor first
 * looked (tmux, ssh-agent, X11: programs of the user's that the session did not start). Sockets
 * bound later in a temp dir are taken for the session's own (a test server a command started)
 * and stay reachable, as does everything inside the workspace.
 */
import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";

export interface BoundSocket {
  /** The socket's inode (sockfs), unique while it lives. */
  inode: string;
  path: string;
}

/** The named sockets in /proc/net/unix's text: abstract (`@…`) and unnamed ones left out. */
export function parseNamedSockets(text: string): BoundSocket[] {
  const out: BoundSocket[] = [];
  for (const line of text.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path: the path is everything after the 7th field.
    const m = /^\s*\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+(\d+)\s(\/.*)$/.exec(line);
    if (m) out.push({ inode: m[1]!, path: m[2]! });
  }
  return out;
}

/** Socket inodes in the temp dirs at this process's first look: not the session's own. */
let foreignInTemp: Set<string> | undefined;
/** Real paths of the directories sockets were bound in (they rarely change). */
const realDirs = new Map<string, string | null>();
const MAX_CACHED_DIRS = 4096;

function realDir(dir: string): string | undefined {
  let r = realDirs.get(dir);
  if (r === undefined) {
    try {
      r = realpathSync(dir);
    } catch {
      r = null;
    }
    if (realDirs.size >= MAX_CACHED_DIRS) realDirs.clear();
    realDirs.set(dir, r);
  }
  return r ?? undefined;
}

const inside = (p: string, places: readonly string[]) =>
  places.some((place) => p === place || p.startsWith(place.endsWith("/") ? place : `${place}/`));

/** Test hook: forget the first look, as a new executor would. */
export function resetSocketSnapshot(): void {
  foreignInTemp = undefined;
  realDirs.clear();
}

/**
 * The socket paths to hide from a command whose writable places are `roots` (workspace and
 * extra roots) and `temp` (the temp dirs), all real paths. Undefined when /proc/net/unix cannot
 * be read (no /proc): the caller says the sockets could not be listed.
 */
export function socketsToHide(
  roots: readonly string[],
  temp: readonly string[],
  procNetUnix = "/proc/net/unix",
): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(procNetUnix, "utf8");
  } catch {
    return undefined;
  }
  const sockets = parseNamedSockets(text);
  const located = sockets.map((s) => ({ ...s, real: locate(s.path) }));
  foreignInTemp ??= new Set(located.filter((s) => s.real !== undefined && inside(s.real, temp)).map((s) => s.inode));
  const hide = new Set<string>();
  for (const s of located) {
    if (s.real === undefined || inside(s.real, roots)) continue;
    if (inside(s.real, temp) && !foreignInTemp.has(s.inode)) continue;
    hide.add(s.path);
  }
  return [...hide];
}

/** The socket's path with its directory's symlinks resolved, or undefined when that is gone. */
function locate(p: string): string | undefined {
  const dir = realDir(path.dirname(p));
  return dir === undefined ? undefined : path.join(dir, path.basename(p));
}
