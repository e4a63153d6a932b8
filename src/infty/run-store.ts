/**
 * The durable run store: RELAY_HOME/infty/<run-id>/ with artifacts/, memory/, index/,
 * deliverable/, run.json (state), events.jsonl (event-log.ts) and memory/notes.jsonl (append-only); its
 * checkpoints are commits in .checkpoints.git (checkpoints.ts). Every run.json change is one atomic replace (temp file, fsync, rename), so a
 * crash at any instant, SIGKILL included, leaves the state before or after a transition. A run
 * is built in a hidden staging folder and renamed into place: it exists whole or not at all.
 */

import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rename, rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { makePrivateDirs } from "../rollout/writer.ts";
import { byCodeUnits } from "../util/compare.ts";
import { MAX_TIMER_MS } from "../util/duration.ts";
import { parseJsonWith } from "../util/json.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { isInside } from "../util/paths.ts";
import { err, ok, type Result } from "../util/result.ts";
import { describeIssues } from "../util/schema-issues.ts";
import { RoleActivitySchema } from "./activity.ts";
import { appendLine, fsyncDir, readJsonl, removeStaleTemps, writeFileAtomic, writeJsonAtomic } from "./durable.ts";
import { type LogEventInput, redactLogLine } from "./event-log.ts";
import type { LeaseGrant } from "./lease.ts";
import { linesFromEnd } from "./log-tail.ts";
import { RepoRecordSchema } from "./repo/record.ts";
import { RoleNameSchema, verifierNumber } from "./roles.ts";
import { RunSettingsSchema } from "./run-settings.ts";

export const RUN_DIRS = ["artifacts", "memory", "index", "deliverable"] as const;

export { RoleNameSchema };

export const VerdictRecordSchema = lazySchema(() =>
  z.object({
    role: z.string(),
    verdict: z.enum(["pass", "fail"]),
    reasons: z.array(z.string()),
    suggestions: z.array(z.string()).default([]),
  }),
);

export const PendingSchema = lazySchema(() =>
  z.discriminatedUnion("type", [
    /** A message the Solver must receive next. */
    z.object({ type: z.literal("solver_message"), message: z.string() }),
    z.object({ type: z.literal("direction"), prompt: z.string() }),
    z.object({
      type: z.literal("verification"),
      claim_path: z.string(),
      notes: z.string().nullable(),
      final: z.boolean().default(false),
      /** A run on a repository: the commit of the run's branch under review. */
      commit: z.string().optional(),
      /** Verdicts already given: a resumed verification asks only the remaining Verifiers. */
      verdicts: z.array(VerdictRecordSchema).default([]),
    }),
  ]),
);
export type Pending = z.infer<typeof PendingSchema>;

/**
 * Write-ahead record of a message handed to a role whose answer has not been acted on yet. On
 * resume the role's rollout after `rollout_offset` tells what became of it: answered (the answer
 * is used, not asked for again), mid-turn (the turn is continued) or never recorded (sent again).
 * The transition that uses the answer clears it in the same write.
 */
export const InflightSchema = lazySchema(() =>
  z.object({
    role: RoleNameSchema,
    /** 2: the corrective retry after a malformed reply. */
    attempt: z.number().int().min(1).max(2),
    message: z.string(),
    /** Size of the role's rollout file when the message was sent. */
    rollout_offset: z.number().int().min(0),
  }),
);
export type Inflight = z.infer<typeof InflightSchema>;

/** The in-flight records of a run.json, in either of its shapes. */
export function inflightList(v: Inflight | Inflight[] | null): Inflight[] {
  return v === null ? [] : Array.isArray(v) ? v : [v];
}

/** The longest wall-clock budget `--max-wall` gives a run: a year (older runs may hold more). */
export const MAX_WALL_MS = 366 * 86_400_000;

export const RunStatusSchema = lazySchema(() =>
  z.enum(["running", "complete", "failed", "interrupted", "budget_exhausted"]),
);

export const RunMetaSchema = lazySchema(() =>
  z.object({
    run_id: z.string(),
    objective: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    heartbeat_at: z.string(),
    status: RunStatusSchema,
    status_detail: z.string().default(""),
    verifiers: z.number().int().min(0),
    consensus: z.enum(["all", "majority"]),
    roles: z.array(
      z.object({ role: RoleNameSchema, session_id: z.string().optional(), rollout_path: z.string().optional() }),
    ),
    /** Solver turns so far (the turn budget counts these). */
    turns: z.number().int().min(0),
    max_turns: z.number().int().min(1),
    /** Wall-clock budget over all attempts, in ms. */
    max_wall_ms: z.number().int().min(1),
    wall_ms_used: z.number().int().min(0),
    pending: PendingSchema.nullable(),
    /** One record per role with a message out (Verifiers are asked in parallel); older runs hold a single one. */
    inflight: z
      .union([InflightSchema, z.array(InflightSchema)])
      .nullable()
      .default(null),
    /** Transitions so far; notes carry it, so a transition replayed after a crash adds none twice. */
    handoffs: z.number().int().min(0).default(0),
    /** The accepted delivery; on a repository also the branch and the commit the Verifiers passed. */
    deliverable: z
      .object({
        path: z.string(),
        summary: z.string().nullable(),
        branch: z.string().optional(),
        commit: z.string().optional(),
      })
      .nullable(),
    /** The id of the newest checkpoint (or the one a restore went back to). */
    last_checkpoint: z.string().nullable(),
    /** When the Verifiers last passed a claim; a delivery is only accepted after one. */
    verified_at: z.string().nullable().default(null),
    next_note: z.number().int().min(1),
    /** Tokens all roles have used (every model request's total), and the budget for them. */
    tokens_used: z.number().int().min(0).default(0),
    max_tokens: z.number().int().min(1).nullable().default(null),
    /** What each role was doing at the last heartbeat (`relay infty status` shows it). */
    activity: z.array(RoleActivitySchema).default([]),
    /** Roles whose model server refused structured output: their turns carry the contract in the prompt only. */
    prompt_only_roles: z.array(RoleNameSchema).default([]),
    /** What the roles' sessions ran with, so `relay infty resume` continues the same way. */
    settings: RunSettingsSchema.optional(),
    /** Notes from memory/operator-notes.jsonl the Director has been sent (operator.ts). */
    operator_notes_delivered: z.number().int().min(0).default(0),
    /** The repository the run works on (its own branch and checkout); absent: the run store only. */
    repo: RepoRecordSchema.optional(),
    /** How long a Director or Verifier may take for one answer; older runs: the default. */
    role_timeout_ms: z.number().int().min(1_000).max(MAX_TIMER_MS).optional(),
  }),
);
export type RunMeta = z.infer<typeof RunMetaSchema>;

export const NoteSchema = lazySchema(() =>
  z.object({
    id: z.string(),
    at: z.string(),
    role: z.string(),
    kind: z.string(),
    text: z.string(),
    handoff: z.number().int().min(0).optional(),
  }),
);
export type Note = z.infer<typeof NoteSchema>;

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

/** Where `relay infty run` builds a run before renaming it into place; never a valid run id. */
const stagingDir = (root: string, runId: string) => path.join(root, `.creating-${runId}`);

type CreateInit = Pick<
  RunMeta,
  | "run_id"
  | "objective"
  | "verifiers"
  | "consensus"
  | "max_turns"
  | "max_wall_ms"
  | "settings"
  | "role_timeout_ms"
  | "repo"
> &
  Partial<Pick<RunMeta, "max_tokens" | "prompt_only_roles">>;

/** The first index/README.md of a run; the Solver keeps it from then on. */
const INDEX_README_START =
  "# Index of this run\n\n(The Solver keeps this file: what each artifact is, which claim covers it, where things stand.)\n";

/** Thrown by a write of run.json when this process no longer holds the run's lease. */
export class LeaseLostError extends Error {}

const startOver = (runId: string) => `relay infty run --run-id ${runId} "<objective>"`;

/** Files (not folders) under `dir`, to tell an empty leftover from one holding work. */
async function hasFiles(dir: string): Promise<boolean> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (e.isFile() || (e.isDirectory() && (await hasFiles(path.join(dir, e.name))))) return true;
  }
  return false;
}

export class RunStore {
  /** Saves run one after another (the heartbeat timer and handoffs both save). */
  private saving: Promise<void> = Promise.resolve();
  /** Appends log lines one after another, in the order they were logged. */
  private logging: Promise<void> = Promise.resolve();
  /** The lease this process drives the run under: every run.json write checks it first. */
  private grant: LeaseGrant | undefined;
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
  static async ensureIndexReadme(dir: string): Promise<void> {
    const file = path.join(dir, "index", "README.md");
    if (existsSync(file)) return;
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileAtomic(file, INDEX_README_START);
  }

  static runsRoot(home: string): string {
    return path.join(home, "infty");
  }

  static async create(home: string, init: CreateInit, pending: Pending | null = null): Promise<Result<RunStore>> {
    const root = RunStore.runsRoot(home);
    const dir = path.join(root, init.run_id);
    if (existsSync(path.join(dir, "run.json")))
      return err(
        "run_exists",
        `run ${init.run_id} already exists at ${dir}; resume it with: relay infty resume ${init.run_id}`,
      );
    // A folder without run.json is what a creation stopped by a crash leaves (or older relays did).
    if (existsSync(dir)) {
      if (await hasFiles(dir))
        return err(
          "run_exists",
          `${dir} exists without a run.json but holds files; move it away or pick another --run-id`,
        );
      await rm(dir, { recursive: true, force: true });
    }
    const now = new Date().toISOString();
    const meta: RunMeta = {
      max_tokens: null,
      operator_notes_delivered: 0,
      prompt_only_roles: [],
      ...init,
      created_at: now,
      updated_at: now,
      heartbeat_at: now,
      status: "running",
      status_detail: "",
      roles: [],
      turns: 0,
      wall_ms_used: 0,
      pending,
      inflight: null,
      handoffs: 0,
      deliverable: null,
      last_checkpoint: null,
      verified_at: null,
      next_note: 1,
      tokens_used: 0,
      activity: [],
    };
    validMeta(meta);
    const staging = stagingDir(root, init.run_id);
    await rm(staging, { recursive: true, force: true });
    // Owner-only, as rollouts are: a run holds the roles' conversations and the user's code.
    await makePrivateDirs(root, staging);
    await writeJsonAtomic(path.join(staging, "run.json"), meta);
    const placed = await RunStore.place(staging, dir);
    if ("error" in placed) return placed;
    return ok(new RunStore(dir, meta));
  }

  /** Second half of a creation: the folders, then the rename that makes the run exist. */
  private static async place(staging: string, dir: string): Promise<Result<void>> {
    for (const d of RUN_DIRS) await mkdir(path.join(staging, d), { recursive: true });
    await RunStore.ensureIndexReadme(staging);
    try {
      await rename(staging, dir);
    } catch (e) {
      return err(
        "run_exists",
        `run ${path.basename(dir)} was created by another process meanwhile (${(e as Error).message}); resume it with: relay infty resume ${path.basename(dir)}`,
      );
    }
    await fsyncDir(path.dirname(dir));
    return ok(undefined);
  }

  /**
   * Finishes a creation that a crash interrupted after run.json was written; otherwise says what
   * was lost and how to start over. Only `relay infty resume` calls it (other commands only read).
   */
  private static async recoverCreation(home: string, runId: string): Promise<Result<"recovered">> {
    const root = RunStore.runsRoot(home);
    const dir = path.join(root, runId);
    const staging = stagingDir(root, runId);
    if (existsSync(path.join(staging, "run.json"))) {
      if (existsSync(dir) && !(await hasFiles(dir))) await rm(dir, { recursive: true, force: true });
      const placed = await RunStore.place(staging, dir);
      return "error" in placed ? placed : ok("recovered");
    }
    const leftover = existsSync(staging) ? staging : existsSync(dir) && !(await hasFiles(dir)) ? dir : undefined;
    if (leftover) {
      await rm(leftover, { recursive: true, force: true });
      return err(
        "run_not_created",
        `run ${runId} was never created: relay stopped before it saved the run's state, so nothing of it ran; only an empty folder was left (now removed). Start over with: ${startOver(runId)}`,
      );
    }
    return err("run_not_found", RunStore.notFound(home, runId));
  }

  private static notFound(home: string, runId: string): string {
    return `no run ${runId} under ${RunStore.runsRoot(home)} (a run stopped before it was created leaves none: start it with ${startOver(runId)}); list runs with: relay infty list`;
  }

  /** `recover`: finish a creation a crash interrupted (see recoverCreation); for `relay infty resume`. */
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
            : RunStore.notFound(home, runId),
        );
      const recovered = await RunStore.recoverCreation(home, runId);
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
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${role}.md`);
    await writeFileAtomic(file, `# Handoff summary of the ${role}\n\n${summary.trim()}\n`);
    return file;
  }

  /** Appends one event line to events.jsonl (the `relay infty logs` source), after every earlier one; secrets in its texts are redacted. */
  log(event: LogEventInput): Promise<void> {
    const line = JSON.stringify({ at: new Date().toISOString(), ...redactLogLine(event) });
    const next = this.logging.then(() => appendLine(path.join(this.dir, "events.jsonl"), line));
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

  /** From now on every run.json write first checks that `grant` is still this process's lease. */
  fenceWith(grant: LeaseGrant): void {
    this.grant = grant;
  }

  /** Throws LeaseLostError when another process has taken the run over. */
  async checkLease(): Promise<void> {
    if (!this.grant) return;
    const r = await this.grant.check();
    if ("error" in r) throw new LeaseLostError(r.error.message);
  }

  private save(): Promise<void> {
    const next = this.saving.then(async () => {
      await this.checkLease();
      await writeJsonAtomic(path.join(this.dir, "run.json"), this.meta);
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

/** The run.json of the run in `dir`, read and checked; never written. */
export async function readRunMeta(dir: string): Promise<Result<RunMeta>> {
  const file = path.join(dir, "run.json");
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    return err("run_not_found", `${file} cannot be read (${(e as Error).message})`);
  }
  return parseJsonWith(RunMetaSchema, text, file, {
    code: "run_corrupt",
    invalid: "does not match the run format",
    note: "the run's files are untouched",
    fix: `Fix: correct {fields} in ${file} as said above (relay writes only valid values: a hand edit or another tool changed it), then run the command again.`,
  });
}

/** `p` (relative to `root`, or absolute) resolved through every symlink; an error unless it exists inside `root`. */
export async function resolveWithin(root: string, p: string, what: string): Promise<Result<string>> {
  const abs = path.resolve(root, p);
  if (!isInside(abs, root))
    return err("escapes_run_store", `${p} is outside ${what}; use a path inside it (relative to ${root})`);
  let real: string;
  try {
    real = await realpath(abs);
  } catch {
    return err("not_found", `${p} does not exist in ${what} (${root})`);
  }
  if (!isInside(real, await realpath(root)))
    return err(
      "escapes_run_store",
      `${p} leads outside ${what} through a symlink (to ${real}); copy the file into ${what} instead of linking to it`,
    );
  return ok(real);
}

/** `meta` if run.json may hold it; a bug otherwise: thrown, so nothing invalid is ever written. */
function validMeta(meta: RunMeta): RunMeta {
  const r = RunMetaSchema.safeParse(meta);
  if (!r.success)
    throw new Error(
      `refusing to write an invalid run.json: ${describeIssues(r.error.issues, meta, { objectName: "an object" })
        .map((i) => i.message)
        .join("; ")}`,
    );
  return meta;
}

function roleOrder(role: string): number {
  if (role === "solver") return 0;
  if (role === "director") return 1;
  return 2 + verifierNumber(role);
}
