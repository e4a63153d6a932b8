/**
 * The infty fleet's database (Postgres, `--db postgres://…`): what every worker of a fleet
 * shares: `infty_leases` holds each run's one-driver lease (lease-pg.ts), `infty_runs` the
 * submitted runs and `infty_workers` the workers (queue.ts). Migrations are
 * applied once, under an advisory lock, so workers starting together never race; a migration a
 * newer relay added is left alone.
 */
import type { Generated } from "kysely";
import { type Kysely, type Migration, sql } from "kysely";
import { openPostgres, type PostgresDb } from "../../postgres/pool.ts";
import { applyMigrations } from "../../util/migrate.ts";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";

export interface LeasesTable {
  run_id: string;
  epoch: number;
  holder_pid: number;
  holder_start: string | null;
  holder_host: string;
  acquired_at: Date;
  heartbeat_at: Date;
  released_at: Date | null;
}

/** A submitted run: what to run, and where it stands in the queue. */
export interface RunsTable {
  id: string;
  objective: string;
  /** `relay infty run`'s arguments as submitted (the objective and --run-id left out). */
  args: string[];
  /** Those of `args` that `relay infty resume` takes too (models, tools, budgets). */
  resume_args: string[];
  priority: Generated<number>;
  submitter: string;
  /** Where it was submitted: a worker on a host that has it drives the run from there. */
  cwd: string;
  /** The repository it works on (a URL, or a path as the submitting host saw it); null: none. */
  repo: Generated<string | null>;
  /** The commit it starts from (a path's HEAD at submission); null: the clone's default branch. */
  repo_commit: Generated<string | null>;
  /** queued, running, complete, failed, stopped or parked (see queue.ts). */
  state: string;
  worker: string | null;
  submitted_at: Generated<Date>;
  claimed_at: Date | null;
  /** Whether a driver was ever started for it (then the next one resumes it). */
  started: Generated<boolean>;
  /** Claims of a run already running whose driver was gone, in a row since it last progressed. */
  takeovers: Generated<number>;
  /** Why it is parked or failed, or the last takeover. */
  reason: string | null;
  updated_at: Generated<Date>;
}

/** A worker process, while it runs (its row stays afterwards, with `stopped_at`). */
export interface WorkersTable {
  name: string;
  host: string;
  pid: number;
  max_runs: number;
  started_at: Date;
  heartbeat_at: Date;
  stopped_at: Date | null;
}

/** What someone asked of a run from any machine (relay infty stop/note --db), for its driver to carry out. */
export interface RequestsTable {
  id: Generated<number>;
  run_id: string;
  /** stop or note. */
  kind: string;
  /** A note's text. */
  text: string | null;
  /** Who asked (the command, user and host). */
  from_who: string;
  requested_at: Generated<Date>;
  /** When the driver carried it out; null while it waits. */
  done_at: Date | null;
}

export interface FleetTables {
  infty_leases: LeasesTable;
  infty_runs: RunsTable;
  infty_workers: WorkersTable;
  infty_requests: RequestsTable;
}

export type FleetDb = PostgresDb<FleetTables>;

const MIGRATIONS_TABLE = "relay_infty_migrations";
/** The advisory lock migrations run under (the memories state DB uses another). */
const MIGRATION_LOCK = 7007101;

const migrations: Record<string, Migration> = {
  "0001_leases": {
    // biome-ignore lint/suspicious/noExplicitAny: a migration runs against the schema as it was then, which no current type describes
    async up(db: Kysely<any>) {
      await db.schema
        .createTable("infty_leases")
        .addColumn("run_id", "text", (c) => c.primaryKey())
        .addColumn("epoch", "bigint", (c) => c.notNull())
        .addColumn("holder_pid", "integer", (c) => c.notNull())
        .addColumn("holder_start", "text")
        .addColumn("holder_host", "text", (c) => c.notNull())
        .addColumn("acquired_at", "timestamptz", (c) => c.notNull())
        .addColumn("heartbeat_at", "timestamptz", (c) => c.notNull())
        .addColumn("released_at", "timestamptz")
        .execute();
    },
  },
  "0002_queue": {
    // biome-ignore lint/suspicious/noExplicitAny: as above
    async up(db: Kysely<any>) {
      await db.schema
        .createTable("infty_runs")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("objective", "text", (c) => c.notNull())
        .addColumn("args", "jsonb", (c) => c.notNull())
        .addColumn("resume_args", "jsonb", (c) => c.notNull())
        .addColumn("priority", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("submitter", "text", (c) => c.notNull())
        .addColumn("cwd", "text", (c) => c.notNull())
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("worker", "text")
        .addColumn("submitted_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("claimed_at", "timestamptz")
        .addColumn("started", "boolean", (c) => c.notNull().defaultTo(false))
        .addColumn("takeovers", "integer", (c) => c.notNull().defaultTo(0))
        .addColumn("reason", "text")
        .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .execute();
      await db.schema
        .createIndex("infty_runs_queue")
        .on("infty_runs")
        .columns(["state", "priority", "submitted_at"])
        .execute();
      await db.schema
        .createTable("infty_workers")
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("host", "text", (c) => c.notNull())
        .addColumn("pid", "integer", (c) => c.notNull())
        .addColumn("max_runs", "integer", (c) => c.notNull())
        .addColumn("started_at", "timestamptz", (c) => c.notNull())
        .addColumn("heartbeat_at", "timestamptz", (c) => c.notNull())
        .addColumn("stopped_at", "timestamptz")
        .execute();
    },
  },
  "0003_repositories": {
    // biome-ignore lint/suspicious/noExplicitAny: as above
    async up(db: Kysely<any>) {
      await db.schema.alterTable("infty_runs").addColumn("repo", "text").execute();
      await db.schema.alterTable("infty_runs").addColumn("repo_commit", "text").execute();
    },
  },
  "0004_requests": {
    // biome-ignore lint/suspicious/noExplicitAny: as above
    async up(db: Kysely<any>) {
      await db.schema
        .createTable("infty_requests")
        .addColumn("id", "bigserial", (c) => c.primaryKey())
        .addColumn("run_id", "text", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("text", "text")
        .addColumn("from_who", "text", (c) => c.notNull())
        .addColumn("requested_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
        .addColumn("done_at", "timestamptz")
        .execute();
      await db.schema
        .createIndex("infty_requests_waiting")
        .on("infty_requests")
        .columns(["run_id", "done_at"])
        .execute();
    },
  },
};

/** Opens the fleet DB at `url` and brings its tables up to date. */
export async function openFleetDb(url: string): Promise<Result<FleetDb>> {
  const opened = await openPostgres<FleetTables>(url, "the infty fleet DB");
  if ("error" in opened) return opened;
  const migrated = await migrate(opened.ok.db);
  if ("error" in migrated) {
    await opened.ok.close();
    return err(migrated.error.code, `${migrated.error.message} (fleet DB ${opened.ok.location})`);
  }
  return opened;
}

async function migrate(db: Kysely<FleetTables>): Promise<Result<void>> {
  try {
    await db.transaction().execute(async (tx) => {
      await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(tx);
      await applyMigrations(
        // biome-ignore lint/suspicious/noExplicitAny: the migrations table is not part of FleetTables
        tx as unknown as Kysely<any>,
        { name: MIGRATIONS_TABLE, appliedAt: "timestamptz" },
        migrations,
      );
    });
    return ok(undefined);
  } catch (e) {
    return err("db_migrate", `fleet DB migration failed: ${errorMessage(e)}`);
  }
}
