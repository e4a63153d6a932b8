/**
 * A new session's project instructions, as the reference system builds them: the global
 * RELAY_HOME/AGENTS.override.md or AGENTS.md (the first that is not empty), then the workspace's
 * AGENTS.md files from the repository root down to cwd, read by the executor that owns the
 * workspace, within project_doc_max_bytes. They go into history once, as the first user message.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { RelayConfig } from "../config/config.ts";
import { DEFAULT_PROJECT_DOC_NAMES, type ProjectDoc, ProjectDocsMethod } from "../contracts/project-docs.ts";
import { projectDocMessage } from "../model/context-fragments.ts";
import type { MessageItem } from "../model/items.ts";
import type { RpcPeer } from "../protocol/peer.ts";
import { wholeCharsEnd } from "../util/utf8.ts";

/** The global file is bounded on its own, like one project file. */
export const GLOBAL_DOC_MAX_BYTES = 32 * 1024;

export const PROJECT_DOC_SEPARATOR = "\n\n--- project-doc ---\n\n";

export interface ProjectInstructions {
  item?: MessageItem;
  /** What was read, for the session header. */
  files: Array<Pick<ProjectDoc, "path" | "bytes" | "truncated">>;
  warnings: string[];
}

async function globalDoc(home: string): Promise<ProjectDoc | undefined> {
  for (const name of DEFAULT_PROJECT_DOC_NAMES) {
    const file = path.join(home, name);
    const raw = await readFile(file).catch(() => undefined);
    if (!raw?.toString("utf8").trim()) continue;
    const cut = raw.length > GLOBAL_DOC_MAX_BYTES;
    const head = raw.subarray(0, GLOBAL_DOC_MAX_BYTES);
    const text = head.subarray(0, cut ? wholeCharsEnd(head) : head.length).toString("utf8");
    return { path: file, bytes: raw.length, text, truncated: cut };
  }
  return undefined;
}

async function workspaceDocs(
  peer: RpcPeer,
  cwd: string,
  config: RelayConfig,
): Promise<{ docs: ProjectDoc[]; warnings: string[] }> {
  if (config.project_doc_max_bytes === 0) return { docs: [], warnings: [] };
  const names = [...new Set([...DEFAULT_PROJECT_DOC_NAMES, ...config.project_doc_fallback_filenames])];
  const r = await peer.call(ProjectDocsMethod, { cwd, names, max_bytes: config.project_doc_max_bytes });
  if ("error" in r)
    return { docs: [], warnings: [`the workspace's AGENTS.md files were not read: ${r.error.message}`] };
  return r.ok;
}

export async function loadProjectInstructions(
  peer: RpcPeer,
  home: string,
  cwd: string,
  config: RelayConfig,
): Promise<ProjectInstructions> {
  const global = await globalDoc(home);
  const workspace = await workspaceDocs(peer, cwd, config);
  const warnings = [...workspace.warnings];
  if (global?.truncated)
    warnings.push(`${global.path} is ${global.bytes} bytes; only the first ${GLOBAL_DOC_MAX_BYTES} are used`);
  const docs = [...(global ? [global] : []), ...workspace.docs];
  if (docs.length === 0) return { files: [], warnings };
  const project = workspace.docs.map((d) => d.text.trimEnd()).join("\n\n");
  const text = [global?.text.trimEnd(), project].filter(Boolean).join(PROJECT_DOC_SEPARATOR);
  return {
    item: projectDocMessage(cwd, text),
    files: docs.map(({ path: p, bytes, truncated }) => ({ path: p, bytes, truncated })),
    warnings,
  };
}
