/**
 * kysely's SqliteDialect over the runtime's built-in SQLite: bun:sqlite under Bun, node:sqlite
 * under Deno and Node >= 22.5. Node 20 has neither: opening gives a clear error value.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import path from "node:path";
import { type SqliteDatabase, SqliteDialect, type SqliteStatement } from "kysely";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";

interface NativeStatement {
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(...params: unknown[]): IterableIterator<unknown>;
  columnNames?: string[];
  columns?: () => unknown[];
}
interface NativeDatabase {
  prepare(sql: string): NativeStatement;
  exec(sql: string): unknown;
  close(): void;
}

const READER_RE = /^\s*(select|with|pragma|values|explain)\b|\breturning\b/i;

/** Prepared statements kept per connection: phase 1 runs the same few thousand times over. */
const STATEMENT_CACHE = 256;

function adapt(db: NativeDatabase): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      cache.clear();
      db.close();
    },
    prepare(query: string): SqliteStatement {
      const hit = cache.get(query);
      if (hit) return hit;
      const s = prepareStatement(db, query);
      // Statements that change the schema are not kept: the ones prepared after them see the new columns.
      if (!/^\s*(create|alter|drop)\b/i.test(query)) {
        if (cache.size >= STATEMENT_CACHE) cache.clear();
        cache.set(query, s);
      }
      return s;
    },
  };
}

function prepareStatement(db: NativeDatabase, query: string): SqliteStatement {
  const s = db.prepare(query);
  const reader = Array.isArray(s.columnNames)
    ? s.columnNames.length > 0
    : typeof s.columns === "function"
      ? s.columns().length > 0
      : READER_RE.test(query);
  return {
    reader,
    all: (p) => s.all(...(p as unknown[])),
    run: (p) => {
      const r = s.run(...(p as unknown[]));
      return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
    },
    iterate: (p) => s.iterate(...(p as unknown[])),
  };
}

export type SqliteRuntime = "bun:sqlite" | "node:sqlite";

const BUSY_TIMEOUT_MS = 15_000;

/**
 * Two cron runs opening a fresh DB at once: the switch to WAL can fail with "database is locked"
 * without SQLite's busy handler being consulted, so it is retried here within the same bound.
 */
function switchToWal(db: NativeDatabase): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (e) {
      if (!/locked|busy/i.test(errorMessage(e)) || Date.now() > deadline) throw e;
      Atomics.wait(pause, 0, 0, 20);
    }
  }
}

/**
 * The DB holds memories (redacted) and session paths: only its owner reads it. SQLite gives its
 * -wal and -shm files the DB file's mode, so the file is made (or tightened) 0600 first.
 */
function ownerOnly(file: string): void {
  if (process.platform === "win32") return;
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  else if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
}

/** Opens `file` with the runtime's SQLite and applies the pragmas every connection needs. */
export async function openNativeSqlite(file: string): Promise<Result<{ db: NativeDatabase; runtime: SqliteRuntime }>> {
  let db: NativeDatabase;
  let runtime: SqliteRuntime;
  try {
    // A fresh machine has no RELAY_HOME yet: the DB's directory is made, as the DB file is.
    if (file !== ":memory:") {
      mkdirSync(path.dirname(file), { recursive: true });
      ownerOnly(file);
    }
    if (process.versions.bun) {
      const spec = "bun:sqlite";
      const mod = (await import(spec)) as { Database: new (f: string, o?: { create?: boolean }) => NativeDatabase };
      db = new mod.Database(file, { create: true });
      runtime = "bun:sqlite";
    } else {
      const spec = "node:sqlite";
      let mod: { DatabaseSync: new (f: string) => NativeDatabase };
      try {
        mod = (await import(spec)) as typeof mod;
      } catch {
        return err(
          "sqlite_unavailable",
          `this runtime has no built-in SQLite (node:sqlite needs Node >= 22.5; this is Node ${process.versions.node}). ` +
            "Use the relay binary (Bun), Deno 2, a newer Node, or a Postgres state DB with --db postgres://...",
        );
      }
      db = new mod.DatabaseSync(file);
      runtime = "node:sqlite";
    }
  } catch (e) {
    return err("db_open", `cannot open the SQLite state DB ${file}: ${errorMessage(e)}`, { path: file });
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    switchToWal(db);
    db.exec("PRAGMA synchronous = NORMAL");
  } catch (e) {
    db.close();
    return err("db_open", `cannot open the SQLite state DB ${file}: ${errorMessage(e)} (is it a SQLite file?)`, {
      path: file,
    });
  }
  return ok({ db, runtime });
}

export function sqliteDialect(db: NativeDatabase): SqliteDialect {
  return new SqliteDialect({ database: adapt(db) });
}
