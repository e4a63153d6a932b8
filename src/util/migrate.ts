/**
 * The migration loop the SQL databases share (the memories state DB on SQLite or Postgres, the
 * infty fleet DB): create the table of applied migrations if need be, then apply, in name
 * order, each migration it does not list. A migration a newer relay added (listed, unknown
 * here) is left alone. The caller runs this inside its own exclusive transaction, so two
 * processes starting together never both apply one.
 */
import type { Kysely, Migration } from "kysely";
import { byCodeUnits } from "./compare.ts";

export interface MigrationsTable {
  name: string;
  /** How applied_at is kept: seconds since the epoch (bigint), or the database's timestamptz. */
  appliedAt: "epoch-seconds" | "timestamptz";
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema as it was then, which no current type describes
export async function applyMigrations(t: Kysely<any>, table: MigrationsTable, migrations: Record<string, Migration>) {
  await t.schema
    .createTable(table.name)
    .ifNotExists()
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("applied_at", table.appliedAt === "epoch-seconds" ? "bigint" : "timestamptz", (c) => c.notNull())
    .execute();
  const rows: Array<{ name: unknown }> = await t.selectFrom(table.name).select("name").execute();
  const done = new Set(rows.map((r) => String(r.name)));
  for (const [name, m] of Object.entries(migrations).sort(([a], [b]) => byCodeUnits(a, b))) {
    if (done.has(name)) continue;
    await m.up(t);
    const appliedAt = table.appliedAt === "epoch-seconds" ? Math.floor(Date.now() / 1000) : new Date();
    await t.insertInto(table.name).values({ name, applied_at: appliedAt }).execute();
  }
}
