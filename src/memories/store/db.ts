/**
 * The state DB behind `relay memories`: kysely over SQLite (RELAY_HOME/state.sqlite, default) or
 * Postgres (`--db postgres://...`). Tables: `memory_threads` (rollouts seen by the scans of every host),
 * `stage1_outputs` (phase 1 results, usage counts) and `jobs` (leases, backoff, watermarks).
 */
import { Kysely, type Migration, sql, type Transaction } from "kysely";
import { openPostgres as connectPostgres } from "../../postgres/pool.ts";
import { isPostgresUrl } from "../../postgres/url.ts";
import { applyMigrations } from "../../util/migrate.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import { openNativeSqlite, sqliteDialect } from "./sqlite-dialect.ts";

export interface MemoryThreadsTable {
  id: string;
  origin: string;
  rollout_path: string;
  source: string;
  cwd: string;
  git_branch: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  memory_mode: string;
  /** Host whose scan last saw the rollout: `rollout_path` is only readable there. */
  host: string;
}

export interface Stage1OutputsTable {
  thread_id: string;
  source_updated_at: number;
  raw_memory: string;
  rollout_summary: string;
  rollout_slug: string | null;
  generated_at: number;
  usage_count: number | null;
  last_usage: number | null;
  selected_for_phase2: number;
  selected_for_phase2_source_updated_at: number | null;
}

export interface JobsTable {
  kind: string;
  job_key: string;
  status: string;
  worker_id: string | null;
  ownership_token: string | null;
  started_at: number | null;
  finished_at: number | null;
  lease_until: number | null;
  retry_at: number | null;
  retry_remaining: number;
  last_error: string | null;
  input_watermark: number | null;
  last_success_watermark: number | null;
  /** Last sign of life of the lease holder (epoch seconds); a stale one lets others take over. */
  heartbeat_at: number | null;
}

export interface MemoryDB {
  memory_threads: MemoryThreadsTable;
  stage1_outputs: Stage1OutputsTable;
  jobs: JobsTable;
}

export type Db = Kysely<MemoryDB>;
export type Tx = Transaction<MemoryDB> | Kysely<MemoryDB>;

export interface StateDb {
  db: Db;
  kind: "sqlite" | "postgres";
  /** Where it is, for messages (a Postgres URL has its password removed). */
  location: string;
  /** Runs `fn` in a write transaction that excludes every other writer (SQLite BEGIN IMMEDIATE, Postgres advisory lock). */
  exclusive<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const migrations: Record<string, Migration> = {
  "0001_memories": {
    // biome-ignore lint/suspicious/noExplicitAny: a migration runs against the schema as it was then, which no current type describes
    async up(db: Kysely<any>) {
      await db.schema
        .createTable("memory_threads")
        .ifNotExists()
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("origin", "text", (c) => c.notNull())
        .addColumn("rollout_path", "text", (c) => c.notNull())
        .addColumn("source", "text", (c) => c.notNull())
        .addColumn("cwd", "text", (c) => c.notNull())
        .addColumn("git_branch", "text")
        .addColumn("created_at_ms", "bigint", (c) => c.notNull())
        .addColumn("updated_at_ms", "bigint", (c) => c.notNull())
        .addColumn("memory_mode", "text", (c) => c.notNull().defaultTo("enabled"))
        .execute();
      await db.schema
        .createIndex("memory_threads_updated_idx")
        .ifNotExists()
        .on("memory_threads")
        .columns(["updated_at_ms"])
        .execute();
      await db.schema
        .createTable("stage1_outputs")
        .ifNotExists()
        .addColumn("thread_id", "text", (c) => c.primaryKey())
        .addColumn("source_updated_at", "bigint", (c) => c.notNull())
        .addColumn("raw_memory", "text", (c) => c.notNull())
        .addColumn("rollout_summary", "text", (c) => c.notNull())
        .addColumn("rollout_slug", "text")
        .addColumn("generated_at", "bigint", (c) => c.notNull())
        .addColumn("usage_count", "bigint")
        .addColumn("last_usage", "bigint")
        .addColumn("selected_for_phase2", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("selected_for_phase2_source_updated_at", "bigint")
        .execute();
      await db.schema
        .createIndex("stage1_outputs_recency_idx")
        .ifNotExists()
        .on("stage1_outputs")
        .columns(["source_updated_at desc", "thread_id desc"])
        .execute();
      await db.schema
        .createTable("jobs")
        .ifNotExists()
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("job_key", "text", (c) => c.notNull())
        .addColumn("status", "text", (c) => c.notNull())
        .addColumn("worker_id", "text")
        .addColumn("ownership_token", "text")
        .addColumn("started_at", "bigint")
        .addColumn("finished_at", "bigint")
        .addColumn("lease_until", "bigint")
        .addColumn("retry_at", "bigint")
        .addColumn("retry_remaining", "integer", (c) => c.notNull())
        .addColumn("last_error", "text")
        .addColumn("input_watermark", "bigint")
        .addColumn("last_success_watermark", "bigint")
        .addPrimaryKeyConstraint("jobs_pk", ["kind", "job_key"])
        .execute();
      await db.schema
        .createIndex("jobs_kind_status_idx")
        .ifNotExists()
        .on("jobs")
        .columns(["kind", "status", "retry_at", "lease_until"])
        .execute();
    },
  },
  // A shared (Postgres) DB sees rollouts of many hosts; each host claims only its own files.
  "0002_thread_host": {
    // biome-ignore lint/suspicious/noExplicitAny: a migration runs against the schema as it was then, which no current type describes
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable("memory_threads")
        .addColumn("host", "text", (c) => c.notNull().defaultTo(""))
        .execute();
    },
  },
  // Lease holders heartbeat, so that a dead holder on another host is seen long before its lease ends.
  "0003_job_heartbeat": {
    // biome-ignore lint/suspicious/noExplicitAny: a migration runs against the schema as it was then, which no current type describes
    async up(db: Kysely<any>) {
      await db.schema.alterTable("jobs").addColumn("heartbeat_at", "bigint").execute();
    },
  },
};

/**
 * Applies missing migrations inside the exclusive write transaction, so concurrent first runs
 * (two cron jobs, several processes) never race. Migrations a newer relay added are ignored.
 */
async function migrate(state: StateDb): Promise<Result<void>> {
  try {
    await state.exclusive(async (tx) =>
      // biome-ignore lint/suspicious/noExplicitAny: as in the migrations above
      applyMigrations(tx as unknown as Kysely<any>, { name: MIGRATIONS_TABLE, appliedAt: "epoch-seconds" }, migrations),
    );
    return ok(undefined);
  } catch (e) {
    return err("db_migrate", `state DB migration failed: ${errorMessage(e)}`);
  }
}

const MIGRATIONS_TABLE = "relay_memory_migrations";

/** In-process writers queue here first: a synchronous SQLite busy-wait would block the event loop. */
const locks = new Map<string, Promise<unknown>>();
async function withProcessLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const chained = prev.then(() => mine);
  locks.set(key, chained);
  await prev.catch(() => undefined);
  try {
    return await fn();
  } finally {
    release();
    if (locks.get(key) === chained) locks.delete(key);
  }
}

/** `spec`: a SQLite file path, or a `postgres://` / `postgresql://` URL. */
export async function openStateDb(spec: string): Promise<Result<StateDb>> {
  if (isPostgresUrl(spec)) return openPostgres(spec);
  return openSqlite(spec);
}

async function openSqlite(file: string): Promise<Result<StateDb>> {
  const native = await openNativeSqlite(file);
  if ("error" in native) return native;
  const db = new Kysely<MemoryDB>({ dialect: sqliteDialect(native.ok.db) });
  const lockKey = `sqlite:${file}`;
  const state: StateDb = {
    db,
    kind: "sqlite",
    location: file,
    exclusive: (fn) =>
      withProcessLock(lockKey, () =>
        db.connection().execute(async (conn) => {
          await sql`begin immediate`.execute(conn);
          try {
            const out = await fn(conn);
            await sql`commit`.execute(conn);
            return out;
          } catch (e) {
            await sql`rollback`.execute(conn).catch(() => undefined);
            throw e;
          }
        }),
      ),
    close: () => db.destroy(),
  };
  const m = await migrate(state);
  if ("error" in m) {
    await db.destroy();
    return err(m.error.code, `${m.error.message} (state DB ${file})`);
  }
  return ok(state);
}

async function openPostgres(url: string): Promise<Result<StateDb>> {
  const opened = await connectPostgres<MemoryDB>(url, "the Postgres state DB");
  if ("error" in opened) return opened;
  const { db, location } = opened.ok;
  const state: StateDb = {
    db,
    kind: "postgres",
    location,
    exclusive: (fn) =>
      db.transaction().execute(async (tx) => {
        await sql`select pg_advisory_xact_lock(7007007)`.execute(tx);
        return fn(tx);
      }),
    close: () => db.destroy(),
  };
  const m = await migrate(state);
  if ("error" in m) {
    await db.destroy();
    return err(m.error.code, `${m.error.message} (state DB ${location})`);
  }
  return ok(state);
}
