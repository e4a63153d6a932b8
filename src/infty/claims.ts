/**
 * What the orchestrator checks in a claim before Verifiers see it: the claim file and every
 * evidence entry that names a file must stay inside the run store, symlinks followed.
 * Evidence entries that are commands ("npm test") are the Verifiers' business.
 */
import { lstat, readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { resolveWithin } from "./resolve-within.ts";

/** The part of a claim file the orchestrator reads; the rest is for the Verifiers. */
export const ClaimFileSchema = lazySchema(() =>
  z.looseObject({ claim: z.string().optional(), evidence: z.array(z.unknown()).optional() }),
);

/** An evidence entry that is meant as a file: one word, and absolute, `..`-relative or existing. */
async function namesAFile(root: string, entry: string): Promise<boolean> {
  if (/\s/.test(entry) || entry === "") return false;
  if (path.isAbsolute(entry) || entry.split(/[\\/]/).includes("..")) return true;
  return lstat(path.resolve(root, entry)).then(
    () => true,
    () => false,
  );
}

/**
 * A claim file by its real path (one that links out of the run store is an error, never read):
 * its text (undefined when it cannot be read, e.g. a folder) and its JSON (undefined if none).
 */
export async function readClaimFile(
  root: string,
  claimPath: string,
): Promise<Result<{ path: string; raw?: string; json?: unknown }>> {
  const claim = await resolveWithin(root, claimPath, "the run store");
  if ("error" in claim) return claim;
  const raw = await readFile(claim.ok, "utf8").catch(() => undefined);
  if (raw === undefined) return ok({ path: claim.ok });
  try {
    return ok({ path: claim.ok, raw, json: JSON.parse(raw) as unknown });
  } catch {
    return ok({ path: claim.ok, raw });
  }
}

/** The claim's real path, or why it cannot go to the Verifiers (said so the Solver can fix it). */
export async function checkClaim(root: string, claimPath: string): Promise<Result<string>> {
  const claim = await readClaimFile(root, claimPath);
  if ("error" in claim) return claim;
  const parsed = ClaimFileSchema.safeParse(claim.ok.json);
  const evidence = parsed.success ? (parsed.data.evidence ?? []).filter((e): e is string => typeof e === "string") : [];
  const problems: string[] = [];
  for (const entry of evidence) {
    if (!(await namesAFile(root, entry))) continue;
    const r = await resolveWithin(root, entry, "the run store");
    if ("error" in r && r.error.code === "escapes_run_store") problems.push(`evidence ${r.error.message}`);
  }
  if (problems.length)
    return err("escapes_run_store", `the claim ${claimPath} points outside the run store: ${problems.join("; ")}`);
  return ok(claim.ok.path);
}
