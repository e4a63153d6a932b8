/**
 * The names MCP tools have for the model: `server__tool`, in the charset the APIs take
 * (`^[a-zA-Z0-9_-]{1,64}$`). Other characters become `_`; a name over 64 characters keeps its
 * start and gets a short hash of the whole, so two long names stay apart; a name already taken
 * (by another tool or server) gets `_2`, `_3`, ...
 */
import { hashHex } from "../util/random.ts";

export const MAX_TOOL_NAME = 64;
const SEPARATOR = "__";

function sanitize(s: string): string {
  const clean = s.replace(/[^A-Za-z0-9_-]/g, "_");
  return clean === "" ? "_" : clean;
}

function bound(name: string, original: string, max = MAX_TOOL_NAME): string {
  if (name.length <= max) return name;
  const hash = hashHex("sha1", original).slice(0, 8);
  return `${name.slice(0, max - hash.length - 1)}_${hash}`;
}

/** Gives out unique model-facing names; `taken` are names already in use (the executor's tools). */
export class ToolNamer {
  private readonly used: Set<string>;

  constructor(taken: Iterable<string> = []) {
    this.used = new Set(taken);
  }

  name(server: string, tool: string): string {
    const original = `${server}${SEPARATOR}${tool}`;
    const base = bound(`${sanitize(server)}${SEPARATOR}${sanitize(tool)}`, original);
    let candidate = base;
    for (let n = 2; this.used.has(candidate); n++)
      candidate = bound(`${base.slice(0, MAX_TOOL_NAME - String(n).length - 1)}_${n}`, `${original}#${n}`);
    this.used.add(candidate);
    return candidate;
  }
}
