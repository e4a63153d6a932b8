/**
 * What a person types for a run: its full id, `last` (the most recently updated run), or a
 * beginning of its id that only one run has, or else an end (the tag progress lines show). A full id is taken as it is even when the run is
 * half created (its `.creating-<id>` folder), so `relay infty resume <id>` can finish it.
 */
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { byCodeUnits } from "../util/compare.ts";
import { err, ok, type Result } from "../util/result.ts";
import { RunStore, validateRunId } from "./run-store.ts";

/** Candidates named in an ambiguous prefix's error, at most. */
const SHOWN = 5;

/** The ids of the runs under `root` (folders with a run.json), sorted. */
async function runIds(root: string): Promise<string[]> {
  const names = await readdir(root).catch(() => [] as string[]);
  return names.filter((n) => "ok" in validateRunId(n) && existsSync(path.join(root, n, "run.json"))).sort(byCodeUnits);
}

/** The run id `ref` means among `ids` (and `newest`, for `last`); pure, for the tests. */
export function pickRun(ref: string, ids: readonly string[], newest: string | undefined): Result<string> {
  const hint = "list runs with: relay infty list";
  if (ref === "last")
    return newest
      ? ok(newest)
      : err("run_not_found", `there are no runs yet, so none is "last"; start one with: relay infty run "objective"`);
  if (ids.includes(ref)) return ok(ref);
  // A beginning first; then an end, which is what progress lines show as the run's tag (…ab12).
  for (const matches of [ids.filter((id) => id.startsWith(ref)), ids.filter((id) => id.endsWith(ref))]) {
    if (matches.length === 1) return ok(matches[0]!);
    if (matches.length > 1) {
      const shown = matches
        .slice(0, SHOWN)
        .map((id) => `  ${id}`)
        .join("\n");
      const more = matches.length > SHOWN ? `\n  … and ${matches.length - SHOWN} more` : "";
      return err("run_ambiguous", `"${ref}" matches ${matches.length} runs; give more of the id:\n${shown}${more}`);
    }
  }
  return err(
    "run_not_found",
    `no run matches "${ref}" (a full run id, a unique beginning or end of one, or last); ${hint}`,
  );
}

/** Resolves `ref` to a run id under `home`'s runs; a full id (a half-created run's too) passes as it is. */
export async function resolveRunRef(home: string, ref: string): Promise<Result<string>> {
  const root = RunStore.runsRoot(home);
  if (
    "ok" in validateRunId(ref) &&
    ref !== "last" &&
    (existsSync(path.join(root, ref, "run.json")) || existsSync(path.join(root, `.creating-${ref}`)))
  )
    return ok(ref);
  const ids = await runIds(root);
  const newest = ref === "last" ? (await RunStore.list(home)).runs[0]?.run_id : undefined;
  const picked = pickRun(ref, ids, newest);
  if (!("error" in picked) || picked.error.code !== "run_not_found" || ref === "last") return picked;
  // An id no run has: the store says why (not a valid id; never created, and how to start it).
  const loaded = await RunStore.load(home, ref);
  return "error" in loaded ? loaded : picked;
}
