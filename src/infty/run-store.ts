/**
 * The durable run store: RELAY_HOME/infty/<run-id>/ with artifacts/, memory/, index/,
 * checkpoints/, deliverable/, run.json (atomic rewrites), events.jsonl and memory/notes.jsonl
 * (append-only). Whatever was written before a crash, SIGKILL included, is still there.
 */
import { appendFile, cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { err, ok, type Result } from "../util/result.ts";

export const RUN_DIRS = ["artifacts", "memory", "index", "checkpoints", "deliverable"] as const;

export const RoleNameSchema = z.string().regex(/^(solver|director|verifier-\d+)$/);

export const PendingSchema = z.discriminatedUnion("type", [
  /** A message the Solver must receive next. */
  z.object({ type: z.literal("solver_message"), message: z.string() }),
  z.object({ type: z.literal("direction"), prompt: z.string() }),
  z.object({ type: z.literal("verification"), claim_path: z.string(), notes: z.string().nullable(), final: z.boolean().default(false) }),
]);
export type Pending = z.infer<typeof PendingSchema>;

export const RunStatusSchema = z.enum(["running", "complete", "failed", "interrupted", "budget_exhausted"]);

export const RunMetaSchema = z.object({
  run_id: z.string(),
  objective: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  heartbeat_at: z.string(),
  status: RunStatusSchema,
  status_detail: z.string().default(""),
  verifiers: z.number().int().min(0),
  consensus: z.enum(["all", "majority"]),
  roles: z.array(z.object({ role: RoleNameSchema, session_id: z.string().optional(), rollout_path: z.string().optional() })),
  /** Solver turns so far (the turn budget counts these). */
  turns: z.number().int().min(0),
  max_turns: z.number().int().min(1),
  /** Wall-clock budget over all attempts, in ms. */
  max_wall_ms: z.number().int().min(1),
  wall_ms_used: z.number().int().min(0),
  pending: PendingSchema.nullable(),
  deliverable: z.object({ path: z.string(), summary: z.string().nullable() }).nullable(),
  last_checkpoint: z.string().nullable(),
  /** When the Verifiers last passed a claim; a delivery is only accepted after one. */
  verified_at: z.string().nullable().default(null),
  next_note: z.number().int().min(1),
  /** What the roles' sessions ran with, so `relay infty resume` continues the same way. */
  settings: z
    .object({
      model: z.string(),
      model_provider: z.string(),
      base_url: z.string().optional(),
      api_key_env: z.string(),
      sandbox_mode: z.string(),
      sandbox_mechanism: z.string().optional(),
      sandbox_best_effort: z.boolean().optional(),
      approval_policy: z.string().optional(),
      model_reasoning_effort: z.string().optional(),
      model_reasoning_summary: z.string().optional(),
      executor: z.string().optional(),
    })
    .optional(),
});
export type RunMeta = z.infer<typeof RunMetaSchema>;

export const NoteSchema = z.object({ id: z.string(), at: z.string(), role: z.string(), kind: z.string(), text: z.string() });
export type Note = z.infer<typeof NoteSchema>;

export function validateRunId(id: string): Result<string> {
  if (!id || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(id) || id.endsWith(".")) {
    return err("invalid_run_id", `run id ${JSON.stringify(id)} must start with a letter or digit and use only letters, digits, '.', '-', '_'`);
  }
  return ok(id);
}

export function generateRunId(now = new Date()): string {
  const t = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `run-${t}-${Math.random().toString(16).slice(2, 6)}`;
}

let tmpCounter = 0;
async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${++tmpCounter}`;
  await writeFile(tmp, JSON.stringify(value, null, 2) + "\n");
  await rename(tmp, file);
}

export class RunStore {
  /** Saves run one after another (the heartbeat timer and handoffs both save). */
  private saving: Promise<void> = Promise.resolve();

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

  static runsRoot(home: string): string {
    return path.join(home, "infty");
  }

  static async create(home: string, init: Pick<RunMeta, "run_id" | "objective" | "verifiers" | "consensus" | "max_turns" | "max_wall_ms" | "settings">): Promise<Result<RunStore>> {
    const dir = path.join(RunStore.runsRoot(home), init.run_id);
    if (existsSync(path.join(dir, "run.json"))) return err("run_exists", `run ${init.run_id} already exists at ${dir}; resume it with: relay infty resume ${init.run_id}`);
    for (const d of RUN_DIRS) await mkdir(path.join(dir, d), { recursive: true });
    const now = new Date().toISOString();
    const meta: RunMeta = {
      ...init,
      created_at: now,
      updated_at: now,
      heartbeat_at: now,
      status: "running",
      status_detail: "",
      roles: [],
      turns: 0,
      wall_ms_used: 0,
      pending: null,
      deliverable: null,
      last_checkpoint: null,
      verified_at: null,
      next_note: 1,
    };
    const store = new RunStore(dir, meta);
    await store.save();
    return ok(store);
  }

  static async load(home: string, runId: string): Promise<Result<RunStore>> {
    const valid = validateRunId(runId);
    if ("error" in valid) return valid;
    const dir = path.join(RunStore.runsRoot(home), runId);
    let text: string;
    try {
      text = await readFile(path.join(dir, "run.json"), "utf8");
    } catch {
      return err("run_not_found", `no run ${runId} under ${RunStore.runsRoot(home)}; list runs with: relay infty list`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      return err("run_corrupt", `${path.join(dir, "run.json")} is not valid JSON (${(e as Error).message}); the run's files are untouched`);
    }
    const parsed = RunMetaSchema.safeParse(raw);
    if (!parsed.success) return err("run_corrupt", `${path.join(dir, "run.json")} does not match the run format: ${z.prettifyError(parsed.error)}`);
    return ok(new RunStore(dir, parsed.data));
  }

  static async list(home: string): Promise<{ runs: RunMeta[]; warnings: string[] }> {
    const root = RunStore.runsRoot(home);
    const runs: RunMeta[] = [];
    const warnings: string[] = [];
    let names: string[] = [];
    try {
      names = await readdir(root);
    } catch {
      return { runs, warnings };
    }
    for (const name of names) {
      if (!existsSync(path.join(root, name, "run.json"))) continue;
      const r = await RunStore.load(home, name);
      if ("error" in r) warnings.push(r.error.message);
      else runs.push(r.ok.state);
    }
    runs.sort((a, b) => b.updated_at.localeCompare(a.updated_at));
    return { runs, warnings };
  }

  async update(patch: Partial<RunMeta>): Promise<void> {
    this.meta = { ...this.meta, ...patch, updated_at: new Date().toISOString() };
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

  async heartbeat(extraWallMs: number): Promise<void> {
    await this.update({ heartbeat_at: new Date().toISOString(), wall_ms_used: this.meta.wall_ms_used + Math.max(0, Math.round(extraWallMs)) });
  }

  /** Appends one event line to events.jsonl (the `relay infty logs` source). */
  async log(event: Record<string, unknown>): Promise<void> {
    await appendFile(path.join(this.dir, "events.jsonl"), JSON.stringify({ at: new Date().toISOString(), ...event }) + "\n");
  }

  /** Appends a memory note with a stable id; notes are never rewritten. */
  async note(role: string, kind: string, text: string): Promise<Note> {
    const n = this.meta.next_note;
    const note: Note = { id: `note-${String(n).padStart(4, "0")}`, at: new Date().toISOString(), role, kind, text };
    await appendFile(path.join(this.dir, "memory", "notes.jsonl"), JSON.stringify(note) + "\n");
    await this.update({ next_note: n + 1 });
    return note;
  }

  /** A dated snapshot of artifacts/ and memory/; keeps the newest `keep`. */
  async checkpoint(keep = 10): Promise<string> {
    const name = new Date().toISOString().replace(/[:.]/g, "-");
    const target = path.join(this.dir, "checkpoints", name);
    await mkdir(target, { recursive: true });
    for (const d of ["artifacts", "memory"]) await cp(path.join(this.dir, d), path.join(target, d), { recursive: true, errorOnExist: false });
    const all = (await readdir(path.join(this.dir, "checkpoints"))).sort();
    for (const old of all.slice(0, Math.max(0, all.length - keep))) await rm(path.join(this.dir, "checkpoints", old), { recursive: true, force: true });
    await this.update({ last_checkpoint: name });
    return name;
  }

  private save(): Promise<void> {
    const next = this.saving.then(() => writeJsonAtomic(path.join(this.dir, "run.json"), this.meta));
    this.saving = next.catch(() => {});
    return next;
  }

  /** Resolves a path the Solver gave, refusing anything outside the run store. */
  async resolveInside(p: string): Promise<Result<string>> {
    const abs = path.resolve(this.dir, p);
    const rel = path.relative(this.dir, abs);
    if (rel.startsWith("..") || path.isAbsolute(rel)) return err("escapes_run_store", `${p} escapes the run store ${this.dir}`);
    try {
      await stat(abs);
    } catch {
      return err("not_found", `${p} does not exist in the run store ${this.dir}`);
    }
    return ok(abs);
  }
}

function roleOrder(role: string): number {
  if (role === "solver") return 0;
  if (role === "director") return 1;
  return 2 + Number(role.split("-")[1] ?? 0);
}
