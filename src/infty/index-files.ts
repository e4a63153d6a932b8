/**
 * The run's index (formats in index-format.ts): `recordRound` appends a verification round to
 * memory/verifications.jsonl before the handoff that reports it; `writeIndexes` brings the
 * claims and artifacts indexes (manifests index/claims.json and index/artifacts.json and their
 * pages, index-pages.ts) up to date after every handoff. Both are derived (from the rounds, the
 * claim files and artifacts/), so a crash that skips one update is made good by the next.
 *
 * A run's index lives in memory between handoffs (RunIndex, built once per process from the
 * files), so a handoff costs what changed, not what the run holds: the rounds are read once and
 * then appended to; a claim file is read again only when it changed; an artifact is stat'ed and
 * hashed only when the change feed names it (or on a full look); only the pages holding an
 * entry that changed are built and written. Which claims name an artifact is looked up by the
 * artifact's path and its folders, never by trying every claim on every file.
 */

import { lstat, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { byCodeUnits } from "../util/compare.ts";
import { hashHex } from "../util/random.ts";
import { ALL, type Changes } from "./change-feed.ts";
import { readClaimFile } from "./claims.ts";
import { appendLine, readJsonl } from "./durable.ts";
import {
  ARTIFACT_PAGES,
  ARTIFACTS_INDEX,
  type ArtifactEntry,
  type ArtifactsIndex,
  ArtifactsIndexSchema,
  ArtifactsPageSchema,
  CLAIM_PAGES,
  CLAIMS_INDEX,
  type ClaimEntry,
  type ClaimsIndex,
  ClaimsIndexSchema,
  ClaimsPageSchema,
  IndexManifestSchema,
  ROUNDS_FILE,
  type VerificationRound,
  VerificationRoundSchema,
} from "./index-format.ts";
import { lowerBound, PagedIndex, type PagedIndexOptions } from "./index-pages.ts";
import type { RunStore } from "./run-store.ts";
import { count } from "./work-count.ts";

/** A file changed this close to its last look may have kept its size and mtime: hash it again. */
const RACY_MS = 2000;
const CLAIM_TEXT_MAX = 2000;

export function readRounds(runDir: string): Promise<VerificationRound[]> {
  return readJsonl(path.join(runDir, ROUNDS_FILE), VerificationRoundSchema);
}

/** Every string inside a JSON value. */
function strings(v: unknown): string[] {
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v && typeof v === "object") return Object.values(v).flatMap(strings);
  return [];
}

interface ClaimInfo {
  /** The claim file's stat signature when it was read; "" when it could not be read. */
  sig: string;
  text: string | null;
  refs: string[];
}

/**
 * The claim's text and the artifact paths (files or folders) its evidence names. Read as the
 * orchestrator checks claims (claims.ts): a claim that links out of the run store (to
 * /etc/passwd, say) is never read, or its text would land in index/claims.json.
 */
async function readClaim(runDir: string, claimPath: string): Promise<ClaimInfo> {
  count("read");
  const file = await readClaimFile(runDir, claimPath);
  if ("error" in file || file.ok.raw === undefined) return { sig: "", text: null, refs: [] };
  const { raw, json } = file.ok;
  const obj = json && typeof json === "object" ? (json as Record<string, unknown>) : undefined;
  const text = typeof obj?.claim === "string" ? obj.claim : raw.slice(0, CLAIM_TEXT_MAX);
  const sources = obj ? strings(obj.evidence ?? obj) : [raw];
  const refs = sources.flatMap((s) =>
    [...s.matchAll(/artifacts\/[^\s"'`,;:()<>|&*?]*/g)].map((m) => m[0].replace(/[./]+$/, "")),
  );
  return { sig: await statSig(path.join(runDir, claimPath)), text, refs: [...new Set(refs)] };
}

/** What tells a changed file from an unchanged one: inode, size, mtime (of what a link leads to). */
async function statSig(abs: string): Promise<string> {
  count("statted");
  const st = await stat(abs).catch(() => undefined);
  return st ? `${st.ino}:${st.size}:${st.mtimeMs}` : "";
}

type Artifact = Omit<ArtifactEntry, "claims"> & { mtimeMs: number; ino: number; seenAt: number };

/** Regular files under `runDir/rel` (relative to the run store). */
async function filesUnder(runDir: string, rel: string): Promise<string[]> {
  const out: string[] = [];
  count("listed");
  for (const e of await readdir(path.join(runDir, rel), { withFileTypes: true }).catch(() => [])) {
    const p = `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await filesUnder(runDir, p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** A claim as the index knows it: what its file said and where it stands in the order first sent. */
interface KnownClaim extends ClaimInfo {
  rank: number;
  /** Its file has been read (or found missing) at least once. */
  read: boolean;
}

const ARTIFACT_PAGES_OPTIONS: PagedIndexOptions<ArtifactEntry> = {
  manifest: ARTIFACTS_INDEX,
  dir: ARTIFACT_PAGES,
  listKey: "files",
  order: "sorted",
  keyOf: (e) => e.path,
  parsePage: (j) => {
    const r = ArtifactsPageSchema.safeParse(j);
    return r.success ? r.data.files : undefined;
  },
};

const CLAIM_PAGES_OPTIONS: PagedIndexOptions<ClaimEntry> = {
  manifest: CLAIMS_INDEX,
  dir: CLAIM_PAGES,
  listKey: "claims",
  order: "appended",
  keyOf: (e) => e.path,
  parsePage: (j) => {
    const r = ClaimsPageSchema.safeParse(j);
    return r.success ? r.data.claims : undefined;
  },
};

/** The folders above an artifact path, nearest first ("artifacts/a/b.txt" → "artifacts/a", "artifacts"). */
function foldersAbove(p: string): string[] {
  const out: string[] = [];
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) out.push(p.slice(0, i));
  return out;
}

export class RunIndex {
  private readonly roundsOf = new Map<string, VerificationRound[]>();
  /** Each round's (handoff, claim), so that a round replayed after a crash is not added twice. */
  private readonly roundKeys = new Set<string>();
  private readonly claims = new Map<string, KnownClaim>();
  private nextRank = 0;
  /** An artifact path or folder → the claims whose evidence names it. */
  private readonly claimsByRef = new Map<string, Set<string>>();
  /** The claim the run is waiting on (status pending), as of the last write. */
  private pending: string | undefined;
  private readonly artifacts = new Map<string, Artifact>();
  /** The artifacts' paths, sorted (the files of a folder are a range of it). */
  private readonly sorted: string[] = [];

  private constructor(
    private readonly runDir: string,
    private readonly artifactPages: PagedIndex<ArtifactEntry>,
    private readonly claimPages: PagedIndex<ClaimEntry>,
  ) {}

  /** The index of the run in `runDir`: the rounds, and the hashes the last artifacts index holds, read once. */
  static async load(runDir: string): Promise<RunIndex> {
    const artifacts = await PagedIndex.load(runDir, ARTIFACT_PAGES_OPTIONS);
    const claims = await PagedIndex.load(runDir, CLAIM_PAGES_OPTIONS);
    const index = new RunIndex(runDir, artifacts.index, claims.index);
    for (const round of await readRounds(runDir)) index.addRound(round);
    // Hashes from the last index are kept for files unchanged since (size and mtime; inode unknown yet).
    const v1 = ArtifactsIndexSchema.safeParse(artifacts.manifest);
    const at = Date.parse((artifacts.manifest as { generated_at?: string } | undefined)?.generated_at ?? "") || 0;
    for (const f of v1.success ? v1.data.files : artifacts.entries)
      index.artifacts.set(f.path, { ...f, mtimeMs: Date.parse(f.modified_at), ino: -1, seenAt: at });
    index.sorted.push(...[...index.artifacts.keys()].sort(byCodeUnits));
    return index;
  }

  private addRound(round: VerificationRound): void {
    this.roundKeys.add(`${round.handoff} ${round.claim_path}`);
    const list = this.roundsOf.get(round.claim_path) ?? this.roundsOf.set(round.claim_path, []).get(round.claim_path)!;
    list.push(round);
    this.ensureClaim(round.claim_path);
    this.claimPages.put(round.claim_path);
  }

  /** A claim met for the first time gets the next place in the order first sent (it is read at the next write). */
  private ensureClaim(p: string): void {
    if (!this.claims.has(p)) this.claims.set(p, { sig: "", text: null, refs: [], rank: this.nextRank++, read: false });
  }

  /** Appends a round unless this very round (same handoff, same claim) is there already. */
  async recordRound(store: RunStore, round: Omit<VerificationRound, "at" | "handoff">): Promise<void> {
    const handoff = store.state.handoffs;
    if (this.roundKeys.has(`${handoff} ${round.claim_path}`)) return;
    const line: VerificationRound = { at: new Date().toISOString(), handoff, ...round };
    await appendLine(path.join(this.runDir, ROUNDS_FILE), JSON.stringify(line));
    this.addRound(line);
  }

  /** Brings both indexes up to date with what changed (`changes`) and the run's state; the files written or removed. */
  async write(store: RunStore, changes: Changes = ALL): Promise<string[]> {
    this.updatePending(store);
    await this.updateArtifacts(changes);
    await this.updateClaims(changes);
    if (changes.all) this.reconcilePages();
    const head = { run_id: store.id, generated_at: new Date().toISOString() };
    const written = await this.claimPages.write((p) => this.claimEntry(p), head);
    written.push(...(await this.artifactPages.write((p) => this.artifactEntry(p), head)));
    return written;
  }

  /** The claim pending verification is listed (as pending) before its first round; one no longer pending without a round is not. */
  private updatePending(store: RunStore): void {
    const now = store.state.pending?.type === "verification" ? store.state.pending.claim_path : undefined;
    if (now === this.pending) return;
    const was = this.pending;
    this.pending = now;
    if (was !== undefined) {
      if (this.roundsOf.has(was)) this.claimPages.put(was);
      else this.dropClaim(was);
    }
    if (now !== undefined) {
      this.ensureClaim(now);
      this.claimPages.put(now);
    }
  }

  private dropClaim(p: string): void {
    const known = this.claims.get(p);
    if (!known) return;
    this.setRefs(p, known.refs, []);
    this.claims.delete(p);
    this.claimPages.remove(p);
  }

  /** After a full look: every entry built again, and pages of entries that no longer exist emptied. */
  private reconcilePages(): void {
    for (const k of this.artifactPages.keys()) if (!this.artifacts.has(k)) this.artifactPages.remove(k);
    for (const k of this.claimPages.keys()) if (!this.claims.has(k)) this.claimPages.remove(k);
    for (const k of this.sorted) this.artifactPages.put(k);
    for (const k of this.claims.keys()) this.claimPages.put(k);
    this.artifactPages.putAll();
    this.claimPages.putAll();
  }

  private async updateArtifacts(changes: Changes): Promise<void> {
    if (changes.all) {
      const now = new Set(await filesUnder(this.runDir, "artifacts"));
      for (const p of [...this.artifacts.keys()]) if (!now.has(p)) this.remove(p);
      for (const p of now) await this.look(p);
    } else {
      for (const p of changes.paths) if (p === "artifacts" || p.startsWith("artifacts/")) await this.lookAt(p);
    }
  }

  /** The claims whose evidence names `p` or a folder above it, which list `p` among their artifacts. */
  private claimsNaming(p: string): Set<string> {
    const out = new Set<string>();
    for (const ref of [p, ...foldersAbove(p)]) for (const c of this.claimsByRef.get(ref) ?? []) out.add(c);
    return out;
  }

  private remove(p: string): void {
    if (!this.artifacts.delete(p)) return;
    this.sorted.splice(lowerBound(this.sorted, p), 1);
    this.artifactPages.remove(p);
    for (const c of this.claimsNaming(p)) this.claimPages.put(c);
  }

  private put(a: Artifact): void {
    const added = !this.artifacts.has(a.path);
    this.artifacts.set(a.path, a);
    this.artifactPages.put(a.path);
    if (!added) return;
    this.sorted.splice(lowerBound(this.sorted, a.path), 0, a.path);
    for (const c of this.claimsNaming(a.path)) this.claimPages.put(c);
  }

  /** A changed path: a file, a folder (everything under it is looked at again) or a path now gone. */
  private async lookAt(p: string): Promise<void> {
    count("statted");
    const st = await lstat(path.join(this.runDir, p)).catch(() => undefined);
    if (st?.isFile()) return this.look(p);
    for (const k of this.covered(p)) this.remove(k);
    if (st?.isDirectory()) for (const f of await filesUnder(this.runDir, p)) await this.look(f);
  }

  /** One file: hashed unless its inode, size and mtime are what they were (and not racy). */
  private async look(p: string): Promise<void> {
    const abs = path.join(this.runDir, p);
    count("statted");
    const st = await lstat(abs).catch(() => undefined);
    if (!st?.isFile()) return this.remove(p);
    const was = this.artifacts.get(p);
    // A hash from the index on disk knows the mtime to the millisecond only (modified_at, which
    // Node rounds from a fractional mtimeMs and Bun truncates).
    const sameTime = was && (was.ino === -1 ? Math.abs(was.mtimeMs - st.mtimeMs) < 1 : was.mtimeMs === st.mtimeMs);
    const same =
      was &&
      sameTime &&
      was.bytes === st.size &&
      (was.ino === st.ino || was.ino === -1) &&
      st.mtimeMs < was.seenAt - RACY_MS;
    if (same) return void this.artifacts.set(p, { ...was, ino: st.ino });
    count("read");
    const data = await readFile(abs).catch(() => undefined);
    if (!data) return this.remove(p);
    const sha256 = await hashHex("sha256", data);
    const next = {
      path: p,
      bytes: st.size,
      sha256,
      modified_at: st.mtime.toISOString(),
      mtimeMs: st.mtimeMs,
      ino: st.ino,
      seenAt: Date.now(),
    };
    if (was && was.sha256 === sha256 && was.bytes === st.size && was.modified_at === next.modified_at)
      return void this.artifacts.set(p, next);
    this.put(next);
  }

  /** The claims the index lists, each read again only when its file changed. */
  private async updateClaims(changes: Changes): Promise<void> {
    for (const [p, known] of this.claims) {
      const named = changes.all || changes.paths.has(p) || foldersAbove(p).some((f) => changes.paths.has(f));
      // A claim outside the watched folders is looked at every time (its changes are not reported).
      const watched = /^(artifacts|memory|index|deliverable)\//.test(p);
      if (known.read && !named && watched) continue;
      if (known.read && known.sig !== "" && known.sig === (await statSig(path.join(this.runDir, p)))) continue;
      const info = await readClaim(this.runDir, p);
      const same = known.read && info.sig === known.sig && info.text === known.text && sameList(info.refs, known.refs);
      if (same) continue;
      this.setRefs(p, known.refs, info.refs);
      this.claims.set(p, { ...info, rank: known.rank, read: true });
      this.claimPages.put(p);
    }
  }

  /** A claim's evidence now names `after` instead of `before`: the artifacts either covers get their claims listed again. */
  private setRefs(claim: string, before: string[], after: string[]): void {
    if (sameList(before, after)) return;
    for (const ref of before) {
      this.claimsByRef.get(ref)?.delete(claim);
      if (this.claimsByRef.get(ref)?.size === 0) this.claimsByRef.delete(ref);
    }
    for (const ref of after) (this.claimsByRef.get(ref) ?? this.claimsByRef.set(ref, new Set()).get(ref)!).add(claim);
    for (const ref of new Set([...before, ...after])) for (const f of this.covered(ref)) this.artifactPages.put(f);
  }

  /** The artifacts a ref names: the file itself, or every file under the folder. */
  private covered(ref: string): string[] {
    const out: string[] = [];
    for (let i = lowerBound(this.sorted, ref); i < this.sorted.length; i++) {
      const f = this.sorted[i]!;
      if (f === ref) out.push(f);
      else if (f.startsWith(`${ref}/`)) out.push(f);
      else if (!f.startsWith(ref)) break;
    }
    return out;
  }

  private claimEntry(p: string): ClaimEntry {
    const own = (this.roundsOf.get(p) ?? []).map(({ claim_path: _, ...r }) => r);
    const info = this.claims.get(p) ?? { sig: "", text: null, refs: [] };
    const last = own.at(-1);
    const status = p === this.pending || !last ? "pending" : last.overall === "pass" ? "passed" : "failed";
    const artifacts = [...new Set(info.refs.flatMap((r) => this.covered(r)))].sort(byCodeUnits);
    return { path: p, claim: info.text, readable: info.text !== null, status, rounds: own, artifacts };
  }

  /** An artifact with the claims (in the order first sent) whose evidence names it. */
  private artifactEntry(p: string): ArtifactEntry {
    const a = this.artifacts.get(p)!;
    const claims = [...this.claimsNaming(p)].sort((x, y) => this.claims.get(x)!.rank - this.claims.get(y)!.rank);
    return { path: p, bytes: a.bytes, sha256: a.sha256, modified_at: a.modified_at, claims };
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The whole artifacts index, its pages read together (an index from before pages as it is); undefined when there is none. */
export async function readArtifactsIndex(runDir: string): Promise<ArtifactsIndex | undefined> {
  const { entries, manifest } = await PagedIndex.load(runDir, ARTIFACT_PAGES_OPTIONS);
  const head = IndexManifestSchema.safeParse(manifest);
  if (head.success)
    return { version: 2, run_id: head.data.run_id, generated_at: head.data.generated_at, files: entries };
  const whole = ArtifactsIndexSchema.safeParse(manifest);
  return whole.success ? whole.data : undefined;
}

/** The whole claims index, its pages read together (an index from before pages as it is); undefined when there is none. */
export async function readClaimsIndex(runDir: string): Promise<ClaimsIndex | undefined> {
  const { entries, manifest } = await PagedIndex.load(runDir, CLAIM_PAGES_OPTIONS);
  const head = IndexManifestSchema.safeParse(manifest);
  if (head.success)
    return { version: 2, run_id: head.data.run_id, generated_at: head.data.generated_at, claims: entries };
  const whole = ClaimsIndexSchema.safeParse(manifest);
  return whole.success ? whole.data : undefined;
}

/** The index of each store in this process, built on first use. */
const indexes = new WeakMap<RunStore, Promise<RunIndex>>();

export function runIndex(store: RunStore): Promise<RunIndex> {
  let i = indexes.get(store);
  if (!i) indexes.set(store, (i = RunIndex.load(store.dir)));
  return i;
}

/** Appends a round unless this very round (same handoff, same claim) is there already. */
export async function recordRound(store: RunStore, round: Omit<VerificationRound, "at" | "handoff">): Promise<void> {
  await (await runIndex(store)).recordRound(store, round);
}

/** Brings the claims and artifacts indexes up to date (`changes`: what changed; default everything); the files written. */
export async function writeIndexes(store: RunStore, changes: Changes = ALL): Promise<string[]> {
  return (await runIndex(store)).write(store, changes);
}

/** Forgets the index kept for `store` (a restore changed its files under it). */
export function forgetIndex(store: RunStore): void {
  indexes.delete(store);
}
