/**
 * The orchestrator's own index of a run, for a human or a later Solver finding their way in a
 * days-old run: memory/verifications.jsonl (one line per verification round, append-only; the
 * source), and the claims and artifacts indexes derived from it and the files. Each of those is
 * a manifest (index/claims.json, index/artifacts.json) listing its pages in order
 * (index/claims/0001.json, ...; index/artifacts/0001.json, ...), so that a handoff rewrites the
 * pages holding what changed, never the whole index. Formats defined once, here.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { VerdictRecordSchema } from "./run-format.ts";

export const ROUNDS_FILE = "memory/verifications.jsonl";
export const CLAIMS_INDEX = "index/claims.json";
export const ARTIFACTS_INDEX = "index/artifacts.json";
export const CLAIM_PAGES = "index/claims";
export const ARTIFACT_PAGES = "index/artifacts";

/** One verification round of one claim. */
export const VerificationRoundSchema = lazySchema(() =>
  z.object({
    at: z.string(),
    /** The run's handoff count when the round ended: a round replayed after a crash is not added twice. */
    handoff: z.number().int().min(0),
    claim_path: z.string(),
    overall: z.enum(["pass", "fail"]),
    verdicts: z.array(VerdictRecordSchema),
    /** A run on a repository: the commit of the run's branch the Verifiers judged. */
    commit: z.string().optional(),
    /** Why no Verifier was asked (the claim file is missing or outside the run store). */
    problem: z.string().optional(),
  }),
);
export type VerificationRound = z.infer<typeof VerificationRoundSchema>;

export const ClaimEntrySchema = lazySchema(() =>
  z.object({
    path: z.string(),
    /** The claim's text: its "claim" field, else the file's text (cut at 2000 characters); null if unreadable. */
    claim: z.string().nullable(),
    readable: z.boolean(),
    /** pending: sent and not judged yet; else the last round's outcome. */
    status: z.enum(["pending", "passed", "failed"]),
    rounds: z.array(VerificationRoundSchema.omit({ claim_path: true })),
    /** Files under artifacts/ its evidence names. */
    artifacts: z.array(z.string()),
  }),
);
export type ClaimEntry = z.infer<typeof ClaimEntrySchema>;

/** A page of an index: up to a few hundred entries, in the manifest's order. */
export const IndexPageRefSchema = lazySchema(() =>
  z.object({
    /** Relative to the run store, e.g. "index/artifacts/0003.json". */
    file: z.string(),
    entries: z.number().int().min(1),
    /** The key (path) of its first and last entry. */
    first: z.string(),
    last: z.string(),
  }),
);
export type IndexPageRef = z.infer<typeof IndexPageRefSchema>;

/** index/claims.json and index/artifacts.json: the pages, in order (claims as first sent, artifacts by path). */
export const IndexManifestSchema = lazySchema(() =>
  z.object({
    version: z.literal(2),
    run_id: z.string(),
    generated_at: z.string(),
    entries: z.number().int().min(0),
    /** The number the next new page file gets. */
    next_page: z.number().int().min(1),
    pages: z.array(IndexPageRefSchema),
  }),
);
export type IndexManifest = z.infer<typeof IndexManifestSchema>;

export const ClaimsPageSchema = lazySchema(() =>
  z.object({ version: z.literal(2), run_id: z.string(), claims: z.array(ClaimEntrySchema) }),
);
export const ArtifactsPageSchema = lazySchema(() =>
  z.object({ version: z.literal(2), run_id: z.string(), files: z.array(ArtifactEntrySchema) }),
);

/** The whole claims index, as its pages read together give it (or as one file, before pages: version 1). */
export const ClaimsIndexSchema = lazySchema(() =>
  z.object({
    version: z.union([z.literal(1), z.literal(2)]),
    run_id: z.string(),
    generated_at: z.string(),
    claims: z.array(ClaimEntrySchema),
  }),
);
export type ClaimsIndex = z.infer<typeof ClaimsIndexSchema>;

export const ArtifactEntrySchema = lazySchema(() =>
  z.object({
    /** Relative to the run store ("artifacts/..."). */
    path: z.string(),
    bytes: z.number().int().min(0),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    modified_at: z.string(),
    /** Claims whose evidence names this file (or a folder holding it). */
    claims: z.array(z.string()),
  }),
);
export type ArtifactEntry = z.infer<typeof ArtifactEntrySchema>;

/** The whole artifacts index, as its pages read together give it (or as one file, before pages: version 1). */
export const ArtifactsIndexSchema = lazySchema(() =>
  z.object({
    version: z.union([z.literal(1), z.literal(2)]),
    run_id: z.string(),
    generated_at: z.string(),
    files: z.array(ArtifactEntrySchema),
  }),
);
export type ArtifactsIndex = z.infer<typeof ArtifactsIndexSchema>;
