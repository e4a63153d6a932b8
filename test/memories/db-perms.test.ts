/** The SQLite state DB is readable by its owner only, new or found looser. */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { openStateDb } from "../../src/memories/store/db.ts";
import { sqliteSkip } from "./support.ts";

const skip = sqliteSkip || (process.platform === "win32" && "file modes are POSIX only");

describe("state DB file mode", { skip }, () => {
  test("a new state DB and its WAL files are 0600; a looser existing one is tightened", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-db-perms-"));
    const old = process.umask(0);
    try {
      const file = path.join(dir, "fresh", "state.sqlite");
      const db = await openStateDb(file);
      assert.ok("ok" in db, JSON.stringify(db));
      for (const f of [file, `${file}-wal`, `${file}-shm`])
        if (existsSync(f)) assert.equal(statSync(f).mode & 0o777, 0o600, f);
      await db.ok.close();
      const loose = path.join(dir, "loose.sqlite");
      writeFileSync(loose, "");
      chmodSync(loose, 0o644);
      const again = await openStateDb(loose);
      assert.ok("ok" in again, JSON.stringify(again));
      assert.equal(statSync(loose).mode & 0o777, 0o600);
      await again.ok.close();
    } finally {
      process.umask(old);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
