/**
 * Writes the run's index (formats in index-format.ts): `recordRound` appends a verification
 * round to memory/verifications.jsonl before the handoff that reports it; `writeIndexes`
 * rewrites index/claims.json and index/artifacts.json, each atomically, after every handoff.
 * Both index files are derived (from the rounds, the claim files and artifacts/), so a crash
 * that skips one rewrite is made good by the next.
 */
import { hashHex } from "../util/random.ts";
import { mkdir, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { appendLine, readJsonl, writeFileAtomic } from "./durable.ts";
import { ARTIFACTS_INDEX, ArtifactsIndexSchema, CLAIMS_INDEX, ROUNDS_FILE, VerificationRoundSchema, type ArtifactEntry, type ArtifactsIndex, type ClaimEntry, type ClaimsIndex, type VerificationRound } from "./index-format.ts";
import type { RunStore } from "./run-store.ts";
import { readClaimFile } from "./claims.ts";

/** A file changed this close to the last index may have kept its size and mtime: hash it again. */
const RACY_MS = 2000;
const CLAIM_TEXT_MAX = 2000;

export function readRounds(runDir: string): Promise<VerificationRound[]> {
  return readJsonl(path.join(runDir, ROUNDS_FILE), VerificationRoundSchema);
}

/** Appends a round unless this very round (same handoff, same claim) is there already. */
export async function recordRound(store: RunStore, round: Omit<VerificationRound, "at" | "handoff">): Promise<void> {
  const handoff = store.state.handoffs;
  if ((await readRounds(store.dir)).some((r) => r.handoff === handoff && r.claim_path === round.claim_path)) return;
  await appendLine(path.join(store.dir, ROUNDS_FILE), JSON.stringify({ at: new Date().toISOString(), handoff, ...round } satisfies VerificationRound));
}

/** Every string inside a JSON value. */
function strings(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v && typeof v === "object") return Object.values(v).flatMap(strings);
  return [];
}

/**
 * The claim's text and the artifact paths (files or folders) its evidence names. Read as the
 * orchestrator checks claims (claims.ts): a claim that links out of the run store (to
 * /etc/passwd, say) is never read, or its text would land in index/claims.json.
 */
async function readClaim(runDir: string, claimPath: string): Promise<{ text: string | null; refs: string[] }> {
  const file = await readClaimFile(runDir, claimPath);
  if ("error" in file || file.ok.raw === undefined) return { text: null, refs: [] };
  const { raw, json } = file.ok;
  const obj = json && typeof json === "object" ? (json as Record<string, unknown>) : undefined;
  const text = typeof obj?.claim === "string" ? obj.claim : raw.slice(0, CLAIM_TEXT_MAX);
  const sources = obj ? strings(obj.evidence ?? obj) : [raw];
  const refs = sources.flatMap((s) => [...s.matchAll(/artifacts\/[^\s"'`,;:()<>|&*?]*/g)].map((m) => m[0].replace(/[./]+$/, "")));
  return { text, refs: [...new Set(refs)] };
}

const covers = (ref: string, file: string) => file === ref || file.startsWith(`${ref}/`);

/** Regular files under artifacts/, relative to the run store, sorted. */
async function artifactFiles(runDir: string, rel = "artifacts"): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(runDir, rel), { withFileTypes: true }).catch(() => [])) {
    const p = `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await artifactFiles(runDir, p)));
    else if (e.isFile()) out.push(p);
  }
  return out.sort();
}

async function previousArtifacts(runDir: string): Promise<ArtifactsIndex | undefined> {
  try {
    const r = ArtifactsIndexSchema.safeParse(JSON.parse(await readFile(path.join(runDir, ARTIFACTS_INDEX), "utf8")));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

async function sha256(file: string): Promise<string> {
  return hashHex("sha256", await readFile(file));
}

/** Sizes and hashes of artifacts/; a file unchanged since the last index (size, mtime) is not read again. */
async function artifactEntries(runDir: string, claimRefs: Map<string, string[]>): Promise<ArtifactEntry[]> {
  const prior = await previousArtifacts(runDir);
  const known = new Map((prior?.files ?? []).map((f) => [f.path, f]));
  const priorAt = prior ? Date.parse(prior.generated_at) : 0;
  const out: ArtifactEntry[] = [];
  for (const rel of await artifactFiles(runDir)) {
    const st = await stat(path.join(runDir, rel)).catch(() => undefined);
    if (!st) continue;
    const modified_at = st.mtime.toISOString();
    const was = known.get(rel);
    const same = was && was.bytes === st.size && was.modified_at === modified_at && st.mtimeMs < priorAt - RACY_MS;
    const hash = same ? was.sha256 : await sha256(path.join(runDir, rel)).catch(() => undefined);
    if (!hash) continue;
    const claims = [...claimRefs].filter(([, refs]) => refs.some((r) => covers(r, rel))).map(([c]) => c);
    out.push({ path: rel, bytes: st.size, sha256: hash, modified_at, claims });
  }
  return out;
}

/** The claims sent for verification so far, in the order first sent, with their rounds. */
async function claimEntries(store: RunStore, rounds: VerificationRound[], files: string[]): Promise<ClaimEntry[]> {
  const pending = store.state.pending?.type === "verification" ? store.state.pending.claim_path : undefined;
  const paths = [...new Set([...rounds.map((r) => r.claim_path), ...(pending ? [pending] : [])])];
  const out: ClaimEntry[] = [];
  for (const p of paths) {
    const own = rounds.filter((r) => r.claim_path === p).map(({ claim_path: _, ...r }) => r);
    const { text, refs } = await readClaim(store.dir, p);
    const last = own.at(-1);
    const status = p === pending || !last ? "pending" : last.overall === "pass" ? "passed" : "failed";
    out.push({ path: p, claim: text, readable: text !== null, status, rounds: own, artifacts: files.filter((f) => refs.some((r) => covers(r, f))) });
  }
  return out;
}

/** Rewrites index/claims.json and index/artifacts.json from the rounds, the claims and artifacts/. */
export async function writeIndexes(store: RunStore): Promise<void> {
  const rounds = await readRounds(store.dir);
  const pending = store.state.pending?.type === "verification" ? [store.state.pending.claim_path] : [];
  const claimPaths = [...new Set([...rounds.map((r) => r.claim_path), ...pending])];
  const refs = new Map<string, string[]>();
  for (const p of claimPaths) refs.set(p, (await readClaim(store.dir, p)).refs);
  const generated_at = new Date().toISOString();
  const files = await artifactEntries(store.dir, refs);
  const claims = await claimEntries(store, rounds, files.map((f) => f.path));
  await mkdir(path.join(store.dir, "index"), { recursive: true });
  const base = { version: 1 as const, run_id: store.id, generated_at };
  await writeIfChanged(path.join(store.dir, CLAIMS_INDEX), { ...base, claims } satisfies ClaimsIndex, "claims");
  await writeIfChanged(path.join(store.dir, ARTIFACTS_INDEX), { ...base, files } satisfies ArtifactsIndex, "files");
}

/**
 * Writes an index file unless its `key` part is what the file holds already (a new
 * `generated_at` alone is no change: every checkpoint would otherwise store a new copy). Derived
 * data, rebuilt at every handoff: whole or absent after a crash is enough, no fsync.
 */
async function writeIfChanged(file: string, value: Record<string, unknown>, key: string): Promise<void> {
  const old = await readFile(file, "utf8").then((t) => JSON.parse(t) as Record<string, unknown>).catch(() => undefined);
  if (old && JSON.stringify(old[key]) === JSON.stringify(value[key]) && old.run_id === value.run_id) return;
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + "\n", { sync: false });
}
