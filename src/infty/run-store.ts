/**
 * The durable run store: RELAY_HOME/infty/<run-id>/ with artifacts/, memory/, index/,
 * deliverable/, run.json (state; its format is run-format.ts), events.jsonl (event-log.ts) and
 * memory/notes.jsonl (append-only); its checkpoints are commits in .checkpoints.git
 * (checkpoints.ts). Every run.json change is one atomic replace (temp file, fsync, rename), so a
 * crash at any instant, SIGKILL included, leaves the state before or after a transition. A run
 * is built in a hidden staging folder and renamed into place: it exists whole or not at all
 * (run-creation.ts).
 */

import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { verifierNumber } from "../config/infty/index.ts";
import { makePrivateDirs } from "../rollout/writer.ts";
import { byCodeUnits } from "../util/compare.ts";
import { err, ok, type Result } from "../util/result.ts";
import { appendLine, makeDirIn, readJsonl, removeStaleTemps, writeFileAtomic, writeJsonAtomic } from "./durable.ts";
import { type LogEventInput, redactLogLine } from "./event-log.ts";
import type { LeaseGrant } from "./lease.ts";
import { linesFromEnd } from "./log-tail.ts";
import { resolveWithin } from "./resolve-within.ts";
import {
  type CreateInit,
  createRun,
  ensureIndexReadme,
  notFound,
  recoverCreation,
  stagingDir,
} from "./run-creation.ts";
import { type Note, NoteSchema, type Pending, type RunMeta, readRunMeta, validMeta } from "./run-format.ts";

/** The orchestrator takes run.json's types from here (run-format.ts holds them). */
export { type Inflight, inflightList, type Pending, type RunMeta } from "./run-format.ts";

export function validateRunId(id: string): Result<string> {
  if (!id || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(id) || id.endsWith(".")) {
    return err(
      "invalid_run_id",
      `run id ${JSON.stringify(id)} must start with a letter or digit and use only letters, digits, '.', '-', '_'`,
    );
  }
  return ok(id);
}

export function generateRunId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `run-${t}-${Math.random().toString(16).slice(2, 6)}`;
}

/** Thrown by a write of run.json when this process no longer holds the run's lease. */
export class LeaseLostError extends Error {}

/** Overrides where runs live (see RunStore.runsRoot). */
export const RUNS_ROOT_ENV = "RELAY_INFTY_RUNS_ROOT";
/** The fleet DB's URL (the default of the fleet commands' --db); a fleet driver's children find it here. */
export const FLEET_DB_ENV = "RELAY_INFTY_DB";

export class RunStore {
  /** Saves run one after another (the heartbeat timer and handoffs both save). */
  private saving: Promise<void> = Promise.resolve();
  /** Appends log lines one after another, in the order they were logged. */
  private logging: Promise<void> = Promise.resolve();
  /** The lease this process drives the run under: every run.json write checks it first. */
  private grant: LeaseGrant | undefined;
  /** The store folder's identity when the lease was taken. */
  private identity: { dev: number; ino: number } | undefined;
  /** The notes of the current handoff and the next note number (see noteTail). */
  private notesTail: { handoff: number; notes: Note[]; next: number } | undefined;

  private constructor(
    readonly dir: string,
    private meta: RunMeta,
  ) {}

  get id(): string {
    return this.meta.run_id;
  }

  get state(): Readonly<RunMeta> {
    return this.meta;
  }

  /**
   * index/README.md exists from the start: it is a writable root of the Solver's sandbox, and
   * a root must exist (a run from before keeps the one it has, or gets this one on resume).
   */
  static ensureIndexReadme(dir: string): Promise<void> {
    return ensureIndexReadme(dir);
  }

  /**
   * Where runs live: RELAY_INFTY_RUNS_ROOT when set (a fleet's shared root, which its workers
   * give the runs they drive), else $RELAY_HOME/infty.
   */
  static runsRoot(home: string): string {
    const shared = process.env[RUNS_ROOT_ENV];
    return shared ? path.resolve(shared) : path.join(home, "infty");
  }

  /** A new run, staged and renamed into place (run-creation.ts). */
  static async create(home: string, init: CreateInit, pending: Pending | null = null): Promise<Result<RunStore>> {
    const created = await createRun(RunStore.runsRoot(home), init, pending);
    return "error" in created ? created : ok(new RunStore(created.ok.dir, created.ok.meta));
  }

  /** `recover`: finish a creation a crash interrupted (see run-creation.ts); for `relay infty resume`. */
  static async load(home: string, runId: string, opts: { recover?: boolean } = {}): Promise<Result<RunStore>> {
    const valid = validateRunId(runId);
    if ("error" in valid) return valid;
    const dir = path.join(RunStore.runsRoot(home), runId);
    const file = path.join(dir, "run.json");
    if (!existsSync(file)) {
      if (!opts.recover)
        return err(
          "run_not_found",
          existsSync(stagingDir(RunStore.runsRoot(home), runId))
            ? `run ${runId} is half created (relay stopped while creating it); finish or clean it up with: relay infty resume ${runId}`
            : notFound(RunStore.runsRoot(home), runId),
        );
      const recovered = await recoverCreation(RunStore.runsRoot(home), runId);
      if ("error" in recovered) return recovered;
    }
    const parsed = await readRunMeta(dir);
    if ("error" in parsed) return parsed;
    // Runs made before stores were private are tightened when they are opened.
    await makePrivateDirs(RunStore.runsRoot(home), dir);
    if (opts.recover) await removeStaleTemps(file);
    return ok(new RunStore(dir, parsed.ok));
  }

  static list(home: string): Promise<{ runs: RunMeta[]; warnings: string[] }> {
    return RunStore.listIn(RunStore.runsRoot(home));
  }

  /** The runs in `root` (a home's infty/ folder), most recently updated first. */
  static async listIn(root: string): Promise<{ runs: RunMeta[]; warnings: string[] }> {
    const runs: RunMeta[] = [];
    const warnings: string[] = [];
    let names: string[] = [];
    try {
      names = await readdir(root);
    } catch {
      return { runs, warnings };
    }
    for (const name of names) {
      if (name.startsWith(".creating-")) {
        const id = name.slice(".creating-".length);
        if (!existsSync(path.join(root, id, "run.json")))
          warnings.push(
            `run ${id} is half created (relay stopped while creating it); finish or clean it up with: relay infty resume ${id}`,
          );
        continue;
      }
      if ("error" in validateRunId(name) || !existsSync(path.join(root, name, "run.json"))) continue;
      const r = await readRunMeta(path.join(root, name));
      if ("error" in r) warnings.push(`skipped an unreadable run: ${r.error.message}`);
      else runs.push(r.ok);
    }
    runs.sort((a, b) => byCodeUnits(b.updated_at, a.updated_at));
    return { runs, warnings };
  }

  /** Refuses (throws, writing nothing) a change that would make run.json invalid. */
  async update(patch: Partial<RunMeta>): Promise<void> {
    this.meta = validMeta({ ...this.meta, ...patch, updated_at: new Date().toISOString() });
    await this.save();
  }

  async setRole(role: string, session: { session_id: string; rollout_path: string }): Promise<void> {
    const roles = this.meta.roles.filter((r) => r.role !== role);
    roles.push({ role, ...session });
    roles.sort((a, b) => roleOrder(a.role) - roleOrder(b.role));
    await this.update({ roles });
  }

  rolloutOf(role: string): string | undefined {
    return this.meta.roles.find((r) => r.role === role)?.rollout_path;
  }

  /** Saves the run's progress and renews the lease; throws LeaseLostError once another process holds it. */
  async heartbeat(
    extraWallMs: number,
    progress: Partial<Pick<RunMeta, "activity" | "tokens_used">> = {},
  ): Promise<void> {
    const beat = await this.grant?.beat();
    // Only a lease another process holds ends the run; a busy lock or a failed read is tried again at the next beat.
    if (beat && "error" in beat)
      throw beat.error.code === "lease_lost" ? new LeaseLostError(beat.error.message) : new Error(beat.error.message);
    await this.update({
      ...progress,
      heartbeat_at: new Date().toISOString(),
      wall_ms_used: this.meta.wall_ms_used + Math.max(0, Math.round(extraWallMs)),
    });
  }

  /** Keeps a role's compaction summary in memory/handoffs/, so the handoff survives the session's history. */
  async keepSummary(role: string, summary: string): Promise<string> {
    const dir = path.join(this.dir, "memory", "handoffs");
    await makeDirIn(dir);
    const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${role}.md`);
    await writeFileAtomic(file, `# Handoff summary of the ${role}\n\n${summary.trim()}\n`);
    return file;
  }

  /** Appends one event line to events.jsonl (the `relay infty logs` source), after every earlier one; secrets in its texts are redacted. */
  log(event: LogEventInput): Promise<void> {
    const line = JSON.stringify({ at: new Date().toISOString(), ...redactLogLine(event) });
    const next = this.logging.then(async () => {
      await this.checkFolder();
      await appendLine(path.join(this.dir, "events.jsonl"), line);
    });
    this.logging = next.catch(() => {});
    return next;
  }

  /** The notes in memory/notes.jsonl; a line torn by a crash is skipped. */
  notes(): Promise<Note[]> {
    return readJsonl(path.join(this.dir, "memory", "notes.jsonl"), NoteSchema);
  }

  /**
   * Appends a memory note with a stable id; notes are never rewritten. The same note in the same
   * transition (a transition replayed after a crash) is not added twice.
   */
  async note(role: string, kind: string, text: string): Promise<Note> {
    const handoff = this.meta.handoffs;
    const tail = await this.noteTail(handoff);
    const same = tail.notes.find((x) => x.role === role && x.kind === kind && x.text === text);
    if (same) return same;
    // The counter in run.json lags the file when a crash fell between the append and the save.
    const n = Math.max(this.meta.next_note, tail.next);
    const note: Note = {
      id: `note-${String(n).padStart(4, "0")}`,
      at: new Date().toISOString(),
      role,
      kind,
      text,
      handoff,
    };
    await appendLine(path.join(this.dir, "memory", "notes.jsonl"), JSON.stringify(note));
    tail.notes.push(note);
    tail.next = n + 1;
    await this.update({ next_note: n + 1 });
    return note;
  }

  /**
   * The notes of this handoff and the next note number. Read once, from the end of notes.jsonl
   * (the notes of a handoff are its last lines; this driver is the only one appending); then
   * kept here, so a note costs an append, not a read of every note before it.
   */
  private async noteTail(handoff: number): Promise<{ handoff: number; notes: Note[]; next: number }> {
    if (this.notesTail?.handoff === handoff) return this.notesTail;
    if (this.notesTail) return (this.notesTail = { handoff, notes: [], next: this.notesTail.next });
    const tail = { handoff, notes: [] as Note[], next: 1 };
    for await (const line of linesFromEnd(path.join(this.dir, "memory", "notes.jsonl"))) {
      const note = NoteSchema.safeParse(safeJson(line));
      if (!note.success) continue;
      tail.next = Math.max(tail.next, Number(/^note-(\d+)$/.exec(note.data.id)?.[1] ?? 0) + 1);
      if (note.data.handoff !== handoff) break;
      tail.notes.unshift(note.data);
    }
    return (this.notesTail = tail);
  }

  /**
   * From now on every run.json write first checks that `grant` is still this process's lease,
   * and that the store's folder is still the one it was (not gone, or made again by a write
   * after a network filesystem went away).
   */
  async fenceWith(grant: LeaseGrant): Promise<void> {
    this.grant = grant;
    const st = await stat(this.dir);
    this.identity = { dev: st.dev, ino: st.ino };
  }

  /** Throws LeaseLostError when another process has taken the run over, an ESTALE error when the folder changed. */
  async checkLease(): Promise<void> {
    if (!this.grant) return;
    const r = await this.grant.check();
    if ("error" in r) throw new LeaseLostError(r.error.message);
    await this.checkFolder();
  }

  /** Throws (code ESTALE, or ENOENT) when the store's folder is not the one the lease was taken in. */
  private async checkFolder(): Promise<void> {
    if (!this.identity) return;
    const st = await stat(this.dir);
    if (st.dev !== this.identity.dev || st.ino !== this.identity.ino)
      throw Object.assign(
        new Error(`${this.dir} is no longer the run's store (replaced, or its filesystem remounted)`),
        {
          code: "ESTALE",
        },
      );
  }

  private save(): Promise<void> {
    const next = this.saving.then(async () => {
      // Checked once the new bytes are on disk, right before the rename: a driver paused while
      // writing (SIGSTOP, a frozen VM) that lost its lease meanwhile finds out before it replaces
      // the file. What is left is the instant between this check and the rename.
      await writeJsonAtomic(path.join(this.dir, "run.json"), this.meta, { beforeRename: () => this.checkLease() });
    });
    this.saving = next.catch(() => {});
    return next;
  }

  /**
   * Resolves a path the Solver gave, refusing anything outside the run store: the real path
   * (every symlink followed) is checked, not the text, so a link to /etc/passwd is refused.
   */
  async resolveInside(p: string): Promise<Result<string>> {
    return resolveWithin(this.dir, p, "the run store");
  }
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

function roleOrder(role: string): number {
  if (role === "solver") return 0;
  if (role === "director") return 1;
  return 2 + verifierNumber(role);
}
