/** The stored memories, one session each: `relay memories list`, `show` and `forget`. */

import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { memoriesDir, relayHome } from "../../home/home.ts";
import { SUMMARIES_DIR, stemOf } from "../../memories/storage.ts";
import { forgetThread, getOutput, getThread, listOutputs, type StateDb } from "../../memories/store/index.ts";
import { alignRows, outputWidth } from "../session-format.ts";
import { ExitCode, fail } from "../usage.ts";
import { DB_HELP, openDb } from "./state-db.ts";

export function addList(memories: Command) {
  memories
    .command("list")
    .description("stored memories, newest first")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON lines")
    .action(async (opts) => {
      const state = await openDb(opts.db, relayHome());
      try {
        const rows = await listOutputs(state);
        if ("error" in rows) fail(rows.error.message, ExitCode.Usage);
        if (opts.json) for (const r of rows.ok) process.stdout.write(JSON.stringify(r) + "\n");
        else if (rows.ok.length === 0) process.stdout.write("no memories yet: run relay memories consolidate\n");
        else process.stdout.write(memoryTable(rows.ok).join("\n") + "\n");
      } finally {
        await state.close();
      }
    });
}

export function addShow(memories: Command) {
  memories
    .command("show")
    .description("one memory: its raw memory and rollout summary")
    .argument("<session>", "last (the newest memory), a session id, or a unique prefix of one")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (ref, opts) => {
      const home = relayHome();
      const state = await openDb(opts.db, home);
      try {
        const id = await memoryId(state, ref, false);
        const r = await getOutput(state, id);
        if ("error" in r) fail(r.error.message, ExitCode.Usage);
        if (!r.ok) fail(`no memory for session ${id} (see relay memories list)`, ExitCode.Failure);
        const th = await getThread(state, id);
        if ("error" in th) fail(th.error.message, ExitCode.Usage);
        if (opts.json) {
          process.stdout.write(JSON.stringify({ ...r.ok, thread: th.ok ?? null }) + "\n");
          return;
        }
        const file = th.ok
          ? path.join(memoriesDir(home), SUMMARIES_DIR, `${stemOf({ ...r.ok, thread: th.ok })}.md`)
          : undefined;
        let onDisk = "";
        if (file)
          onDisk = await readFile(file, "utf8").then(
            () => `\nsummary file: ${file}`,
            () => "",
          );
        process.stdout.write(
          `session: ${id}\nrollout: ${th.ok?.rollout_path ?? "?"}\ncwd: ${th.ok?.cwd ?? "?"}\nused: ${r.ok.usage_count ?? 0}${onDisk}\n\n## Raw memory\n${r.ok.raw_memory.trim()}\n\n## Rollout summary\n${r.ok.rollout_summary.trim()}\n`,
        );
      } finally {
        await state.close();
      }
    });
}

export function addForget(memories: Command) {
  memories
    .command("forget")
    .description(
      "forget one session: drop its memory and never extract it again; the next consolidate removes it from the memory folder",
    )
    .argument("<session>", "last (the newest memory), a session id, or a unique prefix of a stored one")
    .option("--db <url>", DB_HELP)
    .option("--json", "print JSON")
    .action(async (ref, opts) => {
      const state = await openDb(opts.db, relayHome());
      try {
        // A full id with no memory yet is forgotten too: it will never be extracted.
        const id = await memoryId(state, ref, true);
        const r = await forgetThread(state, id, Math.floor(Date.now() / 1000));
        if ("error" in r) fail(r.error.message, ExitCode.Usage);
        if (opts.json) process.stdout.write(JSON.stringify({ thread_id: id, had_memory: r.ok }) + "\n");
        else
          process.stdout.write(
            r.ok
              ? `forgot ${id}; run relay memories consolidate to update the memory folder\n`
              : `nothing stored for ${id}; it will not be extracted\n`,
          );
      } finally {
        await state.close();
      }
    });
}

/**
 * The session a `show`/`forget` argument names: `last` is the newest memory, else an id or a
 * unique prefix of a stored one. `anyId` takes an unknown argument as an id (forget).
 */
async function memoryId(state: StateDb, ref: string, anyId: boolean): Promise<string> {
  const rows = await listOutputs(state);
  if ("error" in rows) fail(rows.error.message, ExitCode.Usage);
  if (ref === "last") {
    const newest = rows.ok[0];
    if (!newest) fail("there are no memories yet, so no last one: run relay memories consolidate", ExitCode.Failure);
    return newest.thread_id;
  }
  const ids = rows.ok.map((r) => r.thread_id);
  if (ids.includes(ref)) return ref;
  const matches = ids.filter((id) => id.startsWith(ref));
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1)
    fail(
      `${ref} is the start of ${matches.length} sessions' ids (${matches.slice(0, 3).join(", ")}${matches.length > 3 ? ", …" : ""}); give more of it`,
      ExitCode.Usage,
    );
  if (anyId) return ref;
  fail(`no memory for session ${ref} (see relay memories list)`, ExitCode.Failure);
}

/** `memories list` for people: one row a memory, under a header. */
function memoryTable(
  rows: Array<{
    thread_id: string;
    source_updated_at: number;
    usage_count?: number | null;
    selected_for_phase2?: boolean | number | null;
    rollout_summary: string;
  }>,
): string[] {
  const cells = rows.map((r) => ({
    cells: [
      r.thread_id,
      new Date(r.source_updated_at * 1000).toISOString().slice(0, 16),
      String(r.usage_count ?? 0),
      r.selected_for_phase2 ? "yes" : "no",
    ],
    text:
      r.rollout_summary
        .split("\n")
        .find((l) => l.trim())
        ?.replace(/^#+\s*/, "") ?? "",
  }));
  return alignRows(cells, outputWidth(process.stdout), {
    cells: ["SESSION", "UPDATED", "USED", "IN MEMORY.md"],
    text: "SUMMARY",
  });
}
