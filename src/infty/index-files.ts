/**
 * The run's index (formats in index-format.ts): `recordRound` appends a verification round to
 * memory/verifications.jsonl before the handoff that reports it; `writeIndexes` brings
 * index/claims.json and index/artifacts.json up to date after every handoff. Both index files
 * are derived (from the rounds, the claim files and artifacts/), so a crash that skips one
 * update is made good by the next.
 *
 * A run's index lives in memory between handoffs (RunIndex, built once per process from the
 * files), so a handoff costs what changed, not what the run holds: the rounds are read once and
 * then appended to; a claim file is read again only when it changed; an artifact is stat'ed and
 * hashed only when the change feed names it (or on a full look); a file is written only when
 * its content changed. Which claims name an artifact is looked up by the artifact's path and its
 * folders, never by trying every claim on every file.
 */
import { hashHex } from "../util/random.ts";
import { byCodeUnits } from "../util/compare.ts";
import { lstat, mkdir, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { appendLine, readJsonl, writeFileAtomic } from "./durable.ts";
import { ALL, type Changes } from "./change-feed.ts";
import { ARTIFACTS_INDEX, ArtifactsIndexSchema, CLAIMS_INDEX, ROUNDS_FILE, VerificationRoundSchema, type ArtifactEntry, type ClaimEntry, type VerificationRound } from "./index-format.ts";
import type { RunStore } from "./run-store.ts";
import { readClaimFile } from "./claims.ts";
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
  const refs = sources.flatMap((s) => [...s.matchAll(/artifacts\/[^\s"'`,;:()<>|&*?]*/g)].map((m) => m[0].replace(/[./]+$/, "")));
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

/** The first index in sorted `list` whose item is not before `key`. */
function lowerBound(list: readonly string[], key: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byCodeUnits(list[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class RunIndex {
  private rounds: VerificationRound[] = [];
  private readonly claims = new Map<string, ClaimInfo>();
  private readonly artifacts = new Map<string, Artifact>();
  /** The artifacts' paths, sorted (the files of a folder are a range of it); sorted again only after an addition or removal. */
  private sorted: string[] = [];
  private unsorted = false;
  /** What each index file last got, to write only a change. */
  private readonly written = new Map<string, string>();

  private constructor(private readonly runDir: string) {}

  /** The index of the run in `runDir`: the rounds and the last artifacts index read once. */
  static async load(runDir: string): Promise<RunIndex> {
    const index = new RunIndex(runDir);
    index.rounds = await readRounds(runDir);
    const prior = await readFile(path.join(runDir, ARTIFACTS_INDEX), "utf8").then((t) => ArtifactsIndexSchema.safeParse(JSON.parse(t)), () => undefined).catch(() => undefined);
    // Hashes from the last index are kept for files unchanged since (size and mtime; inode unknown yet).
    const at = prior?.success ? Date.parse(prior.data.generated_at) : 0;
    for (const f of prior?.success ? prior.data.files : []) index.artifacts.set(f.path, { ...f, mtimeMs: Date.parse(f.modified_at), ino: -1, seenAt: at });
    index.unsorted = true;
    return index;
  }

  /** Appends a round unless this very round (same handoff, same claim) is there already. */
  async recordRound(store: RunStore, round: Omit<VerificationRound, "at" | "handoff">): Promise<void> {
    const handoff = store.state.handoffs;
    if (this.rounds.some((r) => r.handoff === handoff && r.claim_path === round.claim_path)) return;
    const line: VerificationRound = { at: new Date().toISOString(), handoff, ...round };
    await appendLine(path.join(this.runDir, ROUNDS_FILE), JSON.stringify(line));
    this.rounds.push(line);
  }

  /** Brings both index files up to date with what changed (`changes`) and the run's state; the files written. */
  async write(store: RunStore, changes: Changes = ALL): Promise<string[]> {
    await this.updateArtifacts(changes);
    await this.updateClaims(store, changes);
    if (this.unsorted) this.sorted = [...this.artifacts.keys()].sort(byCodeUnits);
    this.unsorted = false;
    await mkdir(path.join(this.runDir, "index"), { recursive: true });
    const generated_at = new Date().toISOString();
    const base = { version: 1 as const, run_id: store.id, generated_at };
    const written = [];
    if (await this.writeIfChanged(CLAIMS_INDEX, "claims", this.claimEntries(store), base)) written.push(CLAIMS_INDEX);
    if (await this.writeIfChanged(ARTIFACTS_INDEX, "files", this.artifactEntries(store), base)) written.push(ARTIFACTS_INDEX);
    return written;
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

  private remove(p: string): void {
    if (this.artifacts.delete(p)) this.unsorted = true;
  }

  private put(a: Artifact): void {
    if (!this.artifacts.has(a.path)) this.unsorted = true;
    this.artifacts.set(a.path, a);
  }

  /** A changed path: a file, a folder (everything under it is looked at again) or a path now gone. */
  private async lookAt(p: string): Promise<void> {
    count("statted");
    const st = await lstat(path.join(this.runDir, p)).catch(() => undefined);
    if (st?.isFile()) return this.look(p);
    for (const k of [...this.artifacts.keys()]) if (k === p || k.startsWith(`${p}/`)) this.remove(k);
    if (st?.isDirectory()) for (const f of await filesUnder(this.runDir, p)) await this.look(f);
  }

  /** One file: hashed unless its inode, size and mtime are what they were (and not racy). */
  private async look(p: string): Promise<void> {
    const abs = path.join(this.runDir, p);
    count("statted");
    const st = await lstat(abs).catch(() => undefined);
    if (!st?.isFile()) return this.remove(p);
    const was = this.artifacts.get(p);
    const same = was && was.bytes === st.size && was.mtimeMs === st.mtimeMs && (was.ino === st.ino || was.ino === -1) && st.mtimeMs < was.seenAt - RACY_MS;
    if (same) return void this.artifacts.set(p, { ...was, ino: st.ino });
    count("read");
    const data = await readFile(abs).catch(() => undefined);
    if (!data) return this.remove(p);
    this.put({ path: p, bytes: st.size, sha256: await hashHex("sha256", data), modified_at: st.mtime.toISOString(), mtimeMs: st.mtimeMs, ino: st.ino, seenAt: Date.now() });
  }

  /** The claims sent for verification, and the pending one: each read again only when its file changed. */
  private async updateClaims(store: RunStore, changes: Changes): Promise<void> {
    for (const p of this.claimPaths(store)) {
      const known = this.claims.get(p);
      const named = changes.all || [...changes.paths].some((c) => p === c || p.startsWith(`${c}/`));
      // A claim outside the watched folders is looked at every time (its changes are not reported).
      const watched = /^(artifacts|memory|index|deliverable)\//.test(p);
      if (known && !named && watched) continue;
      if (known && known.sig !== "" && known.sig === (await statSig(path.join(this.runDir, p)))) continue;
      this.claims.set(p, await readClaim(this.runDir, p));
    }
  }

  private claimPaths(store: RunStore): string[] {
    const pending = store.state.pending?.type === "verification" ? [store.state.pending.claim_path] : [];
    return [...new Set([...this.rounds.map((r) => r.claim_path), ...pending])];
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

  private claimEntries(store: RunStore): ClaimEntry[] {
    const pending = store.state.pending?.type === "verification" ? store.state.pending.claim_path : undefined;
    return this.claimPaths(store).map((p) => {
      const own = this.rounds.filter((r) => r.claim_path === p).map(({ claim_path: _, ...r }) => r);
      const info = this.claims.get(p) ?? { sig: "", text: null, refs: [] };
      const last = own.at(-1);
      const status = p === pending || !last ? "pending" : last.overall === "pass" ? "passed" : "failed";
      const artifacts = [...new Set(info.refs.flatMap((r) => this.covered(r)))].sort(byCodeUnits);
      return { path: p, claim: info.text, readable: info.text !== null, status, rounds: own, artifacts };
    });
  }

  /** Every artifact with the claims (in the order first sent) whose evidence names it. */
  private artifactEntries(store: RunStore): ArtifactEntry[] {
    const byArtifact = new Map<string, string[]>();
    for (const claim of this.claimPaths(store)) {
      for (const f of new Set((this.claims.get(claim)?.refs ?? []).flatMap((r) => this.covered(r)))) (byArtifact.get(f) ?? byArtifact.set(f, []).get(f)!).push(claim);
    }
    return this.sorted.map((p) => {
      const a = this.artifacts.get(p)!;
      return { path: p, bytes: a.bytes, sha256: a.sha256, modified_at: a.modified_at, claims: byArtifact.get(p) ?? [] };
    });
  }

  /**
   * Writes an index file unless its `key` part is what was written last (a new `generated_at`
   * alone is no change: every checkpoint would otherwise store a new copy). Derived data, made
   * again at every handoff: whole or absent after a crash is enough, no fsync.
   */
  private async writeIfChanged(rel: string, key: string, value: unknown[], base: Record<string, unknown>): Promise<boolean> {
    const part = JSON.stringify(value);
    const file = path.join(this.runDir, rel);
    const last = this.written.get(rel) ?? (await readFile(file, "utf8").then((t) => JSON.stringify((JSON.parse(t) as Record<string, unknown>)[key]), () => undefined).catch(() => undefined));
    this.written.set(rel, part);
    if (last === part) return false;
    count("written");
    await writeFileAtomic(file, JSON.stringify({ ...base, [key]: value }, null, 2) + "\n", { sync: false });
    return true;
  }
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

/** Brings index/claims.json and index/artifacts.json up to date (`changes`: what changed; default everything); the files written. */
export async function writeIndexes(store: RunStore, changes: Changes = ALL): Promise<string[]> {
  return (await runIndex(store)).write(store, changes);
}

/** Forgets the index kept for `store` (a restore changed its files under it). */
export function forgetIndex(store: RunStore): void {
  indexes.delete(store);
}
