/**
 * A Postgres connection for the rooms that keep shared state there (the memories state DB, the
 * infty fleet): a kysely instance over a small `pg` pool, with bigint columns read as numbers
 * and the URL's password kept out of every message. `pg` is loaded on the first open: it is a
 * large module tree that most commands never need.
 */
import { Kysely, PostgresDialect, sql } from "kysely";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { redactUrl } from "./url.ts";

export interface PostgresDb<DB> {
  db: Kysely<DB>;
  /** The URL without its password, for messages. */
  location: string;
  close(): Promise<void>;
}

/**
 * Connects to `url` and checks the connection with one query; `what` names the database in the
 * refusal (`the Postgres state DB`, `the infty fleet DB`).
 */
export async function openPostgres<DB>(
  url: string,
  what: string,
  options: { max?: number } = {},
): Promise<Result<PostgresDb<DB>, "db_open">> {
  const location = redactUrl(url);
  const { default: pg } = await import("pg");
  const int8 = 20;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 4,
    connectionTimeoutMillis: 10_000,
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        oid === int8
          ? (v: string) => Number(v)
          : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
    },
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  try {
    await sql`select 1`.execute(db);
  } catch (e) {
    await db.destroy().catch(() => undefined);
    return err("db_open", `cannot connect to ${what} ${location}: ${errorMessage(e)}`);
  }
  return ok({ db, location, close: () => db.destroy() });
}
