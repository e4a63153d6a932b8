/**
 * A rollout's session source (`session_meta.source`) by name, and which sources the memories'
 * phase 1 reads (`--sources`, `[memories] sources`).
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";

/**
 * The sources a rollout can name: a person at the terminal (`cli`), an IDE or app-server client
 * (`vscode`), a scripted `exec` run, an MCP client (`mcp`), a sub-agent (Codex writes
 * `{"subagent": ...}`), or a source the writer did not know (`unknown`).
 */
export const KNOWN_SOURCES = ["cli", "vscode", "exec", "mcp", "subagent", "unknown"] as const;
export const SourceNameSchema = lazySchema(() => z.enum(KNOWN_SOURCES));
export type SourceName = z.infer<typeof SourceNameSchema>;

/**
 * The reference pipeline's set: only sessions a person drove. Scripted runs repeat the same
 * prompt, and sub-agent transcripts are already summarised in their parent's rollout.
 */
export const DEFAULT_SOURCES: readonly SourceName[] = ["cli", "vscode"];

/** Relay's own phase 2 runs: never read, whatever `--sources` says (memories of memories). */
export const NEVER_READ_SOURCES: readonly string[] = ["memory_consolidation"];

/** The name of `session_meta.source`: a string as written, an object by its only key (`{"subagent": {...}}` → subagent). */
export function sourceName(source: unknown): string {
  if (typeof source === "string") return source;
  if (source && typeof source === "object") return Object.keys(source)[0] ?? "unknown";
  return "unknown";
}

/**
 * `--sources cli,exec` (comma list; `all` = every known source; `default` = the default set).
 * An unknown name is an error that lists the known ones.
 */
export function parseSources(text: string): Result<SourceName[]> {
  const names = text
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (!names.length)
    return err("sources_empty", `--sources needs at least one of: ${KNOWN_SOURCES.join(", ")} (or all)`);
  const out = new Set<SourceName>();
  for (const n of names) {
    if (n === "all") KNOWN_SOURCES.forEach((s) => out.add(s));
    else if (n === "default") DEFAULT_SOURCES.forEach((s) => out.add(s));
    else {
      const p = SourceNameSchema.safeParse(n);
      if (!p.success)
        return err(
          "sources_unknown",
          `unknown session source "${n}" in --sources: use a comma list of ${KNOWN_SOURCES.join(", ")}, or all, or default (${DEFAULT_SOURCES.join(",")})`,
        );
      out.add(p.data);
    }
  }
  return ok([...out]);
}
