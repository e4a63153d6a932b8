/** Files phase 2 writes from the DB: raw_memories.md and rollout_summaries/<stem>.md. */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { redactSecrets, safeSlug } from "../util/redact.ts";
import type { SelectedOutput } from "./store/outputs.ts";

export const RAW_MEMORIES = "raw_memories.md";
export const SUMMARIES_DIR = "rollout_summaries";
export const MEMORY_MD = "MEMORY.md";
export const MEMORY_SUMMARY = "memory_summary.md";
export const DIFF_FILE = "phase2_workspace_diff.md";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const B62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

function stamp(d: Date): string {
  return d.toISOString().slice(0, 19).replace(/:/g, "-");
}

export function rfc3339(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `<YYYY-MM-DDTHH-MM-SS>-<4 base-62 chars>[-<slug>]`: time from a UUIDv7 id (else the source time). */
export function summaryStem(threadId: string, sourceUpdatedAt: number, slug: string | null): string {
  const m = UUID_RE.exec(threadId);
  const hex = threadId.replace(/-/g, "");
  const ms = m && m[1] === "7" ? parseInt(hex.slice(0, 12), 16) : sourceUpdatedAt * 1000;
  let seed: number;
  if (m) seed = parseInt(hex.slice(24), 16) >>> 0;
  else {
    seed = 0;
    for (const b of new TextEncoder().encode(threadId)) seed = (Math.imul(seed, 31) + b) >>> 0;
  }
  let n = seed % 62 ** 4;
  let hash = "";
  for (let i = 0; i < 4; i++) {
    hash = B62[n % 62]! + hash;
    n = Math.floor(n / 62);
  }
  // Redacted again here: rows written by an older relay may hold unredacted slugs.
  const cleaned = (safeSlug(slug) ?? "")
    .replace(/[^A-Za-z0-9]/g, "_")
    .toLowerCase()
    .slice(0, 60);
  return `${stamp(new Date(ms))}-${hash}${cleaned ? `-${cleaned}` : ""}`;
}

export function stemOf(o: SelectedOutput): string {
  return summaryStem(o.thread_id, o.source_updated_at, o.rollout_slug);
}

/** raw_memories.md (redacted as a whole: rows written by an older relay, cwd paths). */
export function renderRawMemories(sel: SelectedOutput[]): string {
  return redactSecrets(rawMemoriesText(sel));
}

function rawMemoriesText(sel: SelectedOutput[]): string {
  if (!sel.length) return "# Raw Memories\n\nNo raw memories yet.\n";
  const parts = ["# Raw Memories", "", "Merged phase 1 raw memories (ordered by thread id):", ""];
  for (const o of sel) {
    parts.push(
      `## Thread \`${o.thread_id}\``,
      `updated_at: ${rfc3339(o.source_updated_at)}`,
      `cwd: ${o.thread.cwd}`,
      `rollout_path: ${o.thread.rollout_path}`,
      `rollout_summary_file: ${stemOf(o)}.md`,
      "",
      o.raw_memory.trim(),
      "",
    );
  }
  return parts.join("\n");
}

export function renderSummaryFile(o: SelectedOutput): string {
  const head = [
    `thread_id: ${o.thread_id}`,
    `updated_at: ${rfc3339(o.source_updated_at)}`,
    `rollout_path: ${o.thread.rollout_path}`,
    `cwd: ${o.thread.cwd}`,
  ];
  if (o.thread.git_branch) head.push(`git_branch: ${o.thread.git_branch}`);
  return redactSecrets(`${head.join("\n")}\n\n${o.rollout_summary.trim()}\n`);
}

async function writeIfChanged(file: string, text: string): Promise<void> {
  try {
    if ((await readFile(file, "utf8")) === text) return;
  } catch {
    // missing: write it
  }
  await writeFile(file, text);
}

/** Writes the selection's files and deletes summaries that are no longer selected. */
export async function syncInputs(root: string, sel: SelectedOutput[]): Promise<{ written: number; pruned: string[] }> {
  const dir = path.join(root, SUMMARIES_DIR);
  await mkdir(dir, { recursive: true });
  const keep = new Set<string>();
  for (const o of sel) {
    const stem = stemOf(o);
    keep.add(`${stem}.md`);
    await writeIfChanged(path.join(dir, `${stem}.md`), renderSummaryFile(o));
  }
  const pruned: string[] = [];
  for (const name of await readdir(dir)) {
    if (name.endsWith(".md") && !keep.has(name)) {
      await rm(path.join(dir, name), { force: true });
      pruned.push(name);
    }
  }
  await writeIfChanged(path.join(root, RAW_MEMORIES), renderRawMemories(sel));
  return { written: sel.length, pruned: pruned.sort() };
}
