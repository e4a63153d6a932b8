import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { type EligibilityRules, selectCandidates } from "../../src/memories/eligibility.ts";
import { emptySkips } from "../../src/memories/skips.ts";
import type { StateDb } from "../../src/memories/store/db.ts";
import { listOutputs, pruneStage1, recordUsage, selectPhase2Inputs } from "../../src/memories/store/outputs.ts";
import {
  markPhase2Failed,
  markPhase2Succeeded,
  readPhase2Job,
  tryClaimPhase2,
} from "../../src/memories/store/phase2.ts";
import type { ThreadRow } from "../../src/memories/store/rows.ts";
import {
  markStage1Failed,
  markStage1NoOutput,
  markStage1Succeeded,
  readStage1Job,
  tryClaimStage1,
} from "../../src/memories/store/stage1.ts";
import { listThreads, upsertThreads } from "../../src/memories/store/threads.ts";
import { DEFAULT_RETRY_BUDGET } from "../../src/memories/store/tx.ts";
import { assertUpsertsInOrder, DAY, HOUR, ok, openDb, sqliteSkip, tempHome } from "./support.ts";

const NOW = 1_800_000_000; // seconds
const res = (s: string) => ({ rawMemory: `raw ${s}`, rolloutSummary: `summary ${s}`, rolloutSlug: s });

function thread(id: string, updatedMs: number, over: Partial<ThreadRow> = {}): ThreadRow {
  return {
    id,
    origin: "relay",
    rollout_path: `/r/${id}.jsonl`,
    source: "cli",
    cwd: "/w",
    git_branch: null,
    created_at_ms: updatedMs - HOUR,
    updated_at_ms: updatedMs,
    memory_mode: "enabled",
    host: "h1",
    ...over,
  };
}

const claim = (db: StateDb, threadId: string, src: number, over: Partial<Parameters<typeof tryClaimStage1>[1]> = {}) =>
  tryClaimStage1(db, {
    threadId,
    sourceUpdatedAt: src,
    workerId: "w1",
    leaseSeconds: 3600,
    maxRunningJobs: 8,
    now: NOW,
    ...over,
  });

/** What phase 1 may claim of the catalog's rows (the rule phase 1 applies to its scan). */
async function candidates(db: StateDb, rules: EligibilityRules, limit: number): Promise<ThreadRow[]> {
  return selectCandidates(ok(await listThreads(db)), rules, limit, emptySkips());
}

describe("stage 1 claims", { skip: sqliteSkip }, () => {
  test("skips when up to date; a newer source is claimed", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const c = ok(await claim(db, "t1", 100));
      assert.equal(c.kind, "claimed");
      assert.ok(c.kind === "claimed" && ok(await markStage1Succeeded(db, "t1", c.token, 100, res("a"), NOW)));
      assert.equal(ok(await claim(db, "t1", 100)).kind, "skipped_up_to_date");
      assert.equal(ok(await claim(db, "t1", 101)).kind, "claimed");
    } finally {
      await db.close();
    }
  });

  test("a live lease blocks, an expired lease can be stolen, the old token then loses", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const a = ok(await claim(db, "t1", 100, { workerId: "A", leaseSeconds: 60 }));
      assert.equal(a.kind, "claimed");
      assert.equal(ok(await claim(db, "t1", 100, { workerId: "B", now: NOW + 30 })).kind, "skipped_running");
      const b = ok(await claim(db, "t1", 100, { workerId: "B", now: NOW + 61 }));
      assert.equal(b.kind, "claimed");
      assert.ok(a.kind === "claimed");
      assert.equal(
        ok(await markStage1Succeeded(db, "t1", a.token, 100, res("stale"), NOW + 62)),
        false,
        "the stolen claim must not write",
      );
      assert.ok(b.kind === "claimed" && ok(await markStage1Succeeded(db, "t1", b.token, 100, res("fresh"), NOW + 63)));
      const rows = ok(await listOutputs(db));
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.raw_memory, "raw fresh");
    } finally {
      await db.close();
    }
  });

  test("two workers with separate connections: exactly one wins the same thread", async () => {
    await using h = tempHome();
    const db1 = await openDb(h.dbFile);
    const db2 = await openDb(h.dbFile);
    try {
      const [x, y] = await Promise.all([
        claim(db1, "t1", 100, { workerId: "A" }),
        claim(db2, "t1", 100, { workerId: "B" }),
      ]);
      const kinds = [ok(x).kind, ok(y).kind].sort();
      assert.deepEqual(kinds, ["claimed", "skipped_running"]);
    } finally {
      await db1.close();
      await db2.close();
    }
  });

  test("the running cap holds across threads", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      assert.equal(ok(await claim(db, "t1", 100, { maxRunningJobs: 1 })).kind, "claimed");
      assert.equal(ok(await claim(db, "t2", 100, { maxRunningJobs: 1 })).kind, "skipped_cap");
    } finally {
      await db.close();
    }
  });

  test("failure backoff, retry exhaustion, and reset when the source advances", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      let now = NOW;
      for (let i = 0; i < DEFAULT_RETRY_BUDGET; i++) {
        const c = ok(await claim(db, "t1", 100, { now }));
        assert.equal(c.kind, "claimed", `attempt ${i + 1}`);
        assert.ok(c.kind === "claimed" && ok(await markStage1Failed(db, "t1", c.token, "boom", 3600, now)));
        assert.equal(
          ok(await claim(db, "t1", 100, { now: now + 10 })).kind,
          i < DEFAULT_RETRY_BUDGET - 1 ? "skipped_retry_backoff" : "skipped_retry_exhausted",
        );
        now += 3601;
      }
      assert.equal(ok(await claim(db, "t1", 100, { now })).kind, "skipped_retry_exhausted");
      const job = ok(await readStage1Job(db, "t1"))!;
      assert.equal(job.retry_remaining, 0);
      assert.equal(job.last_error, "boom");
      assert.equal(ok(await claim(db, "t1", 200, { now })).kind, "claimed");
      const after = ok(await readStage1Job(db, "t1"))!;
      assert.equal(after.retry_remaining, DEFAULT_RETRY_BUDGET);
      assert.equal(after.input_watermark, 200);
    } finally {
      await db.close();
    }
  });

  test("no output deletes the old memory and still counts as up to date", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const c1 = ok(await claim(db, "t1", 100));
      assert.ok(c1.kind === "claimed" && ok(await markStage1Succeeded(db, "t1", c1.token, 100, res("a"), NOW)));
      const c2 = ok(await claim(db, "t1", 150));
      assert.ok(c2.kind === "claimed" && ok(await markStage1NoOutput(db, "t1", c2.token, NOW)));
      assert.equal(ok(await listOutputs(db)).length, 0);
      assert.equal(ok(await claim(db, "t1", 150)).kind, "skipped_up_to_date");
    } finally {
      await db.close();
    }
  });

  test("candidates: age window, idle time, source, current thread, disabled", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    const nowMs = NOW * 1000;
    try {
      ok(
        await upsertThreads(db, [
          thread("fresh", nowMs - 1 * HOUR),
          thread("almost", nowMs - 6 * HOUR + 60_000),
          thread("idle", nowMs - 6 * HOUR - 60_000),
          thread("old", nowMs - 11 * DAY),
          thread("exec", nowMs - 8 * HOUR, { source: "exec" }),
          thread("me", nowMs - 8 * HOUR),
          thread("polluted", nowMs - 8 * HOUR, { memory_mode: "polluted" }),
          thread("vscode", nowMs - 9 * HOUR, { source: "vscode" }),
        ]),
      );
      const c = await candidates(
        db,
        { nowMs, maxAgeDays: 10, minIdleHours: 6, sources: ["cli", "vscode"], excludeThreadId: "me" },
        100,
      );
      assert.deepEqual(
        c.map((t) => t.id),
        ["idle", "vscode"],
      );
      assert.deepEqual(
        (await candidates(db, { nowMs, maxAgeDays: 10, minIdleHours: 6, sources: ["cli", "vscode"] }, 1)).map(
          (t) => t.id,
        ),
        ["idle"],
      );
    } finally {
      await db.close();
    }
  });

  test("a session listed twice in one upsert (a resumed copy in both homes) is stored as one upsert after the other", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      await assertUpsertsInOrder(db);
    } finally {
      await db.close();
    }
  });
});

describe("phase 2 lock and selection", { skip: sqliteSkip }, () => {
  test("global lock: one holder, cooldown after success only, claimable after the retry budget", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const req = { workerId: "A", leaseSeconds: 3600, cooldownSeconds: 6 * 3600, now: NOW };
      const a = ok(await tryClaimPhase2(db, req));
      assert.equal(a.kind, "claimed");
      assert.equal(ok(await tryClaimPhase2(db, { ...req, workerId: "B" })).kind, "skipped_running");
      assert.ok(a.kind === "claimed" && ok(await markPhase2Succeeded(db, a.token, 500, [], NOW)));
      assert.equal(ok(await tryClaimPhase2(db, { ...req, now: NOW + 60 })).kind, "skipped_cooldown");
      let now = NOW + 6 * 3600 + 1;
      for (let i = 0; i < 4; i++) {
        const c = ok(await tryClaimPhase2(db, { ...req, now }));
        assert.equal(c.kind, "claimed");
        assert.ok(c.kind === "claimed" && ok(await markPhase2Failed(db, c.token, "failed_agent", 600, now)));
        assert.equal(ok(await tryClaimPhase2(db, { ...req, now: now + 1 })).kind, "skipped_retry_unavailable");
        now += 601;
      }
      assert.equal(ok(await tryClaimPhase2(db, { ...req, now })).kind, "claimed");
    } finally {
      await db.close();
    }
  });

  test("success watermark never moves backwards", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const req = { workerId: "A", leaseSeconds: 3600, cooldownSeconds: 0, now: NOW };
      const a = ok(await tryClaimPhase2(db, req));
      assert.ok(a.kind === "claimed" && ok(await markPhase2Succeeded(db, a.token, 900, [], NOW)));
      const b = ok(await tryClaimPhase2(db, req));
      assert.ok(b.kind === "claimed" && ok(await markPhase2Succeeded(db, b.token, 300, [], NOW)));
      assert.equal(ok(await readPhase2Job(db))!.last_success_watermark, 900);
    } finally {
      await db.close();
    }
  });

  test("selection ranks by usage count, then recent use; stale used memories drop; usage and prune", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const ids = ["a", "b", "c", "d", "e"];
      ok(
        await upsertThreads(
          db,
          ids.map((id) => thread(id, NOW * 1000)),
        ),
      );
      for (const id of ids) {
        const c = ok(await claim(db, id, NOW - 2 * 86_400));
        assert.ok(
          c.kind === "claimed" && ok(await markStage1Succeeded(db, id, c.token, NOW - 2 * 86_400, res(id), NOW)),
        );
      }
      // a: 5 uses 1 day ago; b: 5 uses 10 days ago; c: 1 use 1 h ago; d: used 31 days ago; e: never used.
      for (let i = 0; i < 5; i++) ok(await recordUsage(db, ["a"], NOW - 86_400));
      for (let i = 0; i < 5; i++) ok(await recordUsage(db, ["b"], NOW - 10 * 86_400));
      ok(await recordUsage(db, ["c"], NOW - 3600));
      assert.equal(ok(await recordUsage(db, ["d", "d", "missing"], NOW - 31 * 86_400)), 2);
      const top3 = ok(await selectPhase2Inputs(db, 3, 30, NOW));
      assert.deepEqual(
        top3.map((r) => r.thread_id),
        ["a", "b", "c"],
        "returned in thread id order",
      );
      const all = ok(await selectPhase2Inputs(db, 10, 30, NOW));
      assert.deepEqual(
        all.map((r) => r.thread_id),
        ["a", "b", "c", "e"],
      );
      const top1 = ok(await selectPhase2Inputs(db, 1, 30, NOW));
      assert.deepEqual(
        top1.map((r) => r.thread_id),
        ["a"],
      );
      // d is stale and unselected → pruned; a selected row is kept even when stale.
      const p = ok(await tryClaimPhase2(db, { workerId: "A", leaseSeconds: 60, cooldownSeconds: 0, now: NOW }));
      assert.ok(
        p.kind === "claimed" &&
          ok(
            await markPhase2Succeeded(
              db,
              p.token,
              NOW,
              all.map((r) => ({ threadId: r.thread_id, sourceUpdatedAt: r.source_updated_at })),
              NOW,
            ),
          ),
      );
      assert.equal(ok(await pruneStage1(db, 30, 200, NOW)), 1);
      assert.deepEqual(
        ok(await listOutputs(db))
          .map((r) => r.thread_id)
          .sort(),
        ["a", "b", "c", "e"],
      );
      assert.equal(ok(await pruneStage1(db, 0, 200, NOW + 400 * 86_400)), 0, "selected rows are never pruned");
    } finally {
      await db.close();
    }
  });

  test("a damaged row is a clear error, not a crash", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      await sql`insert into jobs (kind, job_key, status, retry_remaining) values ('memory_stage1', 'bad', 'exploded', 3)`.execute(
        db.db,
      );
      const r = await claim(db, "bad", 100);
      assert.ok("error" in r);
      assert.equal(r.error.code, "db_corrupt");
      assert.match(r.error.message, /damaged jobs row \(memory_stage1\/bad\).*status/);
      await sql`insert into stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, generated_at, selected_for_phase2) values ('x', 'not-a-number', 'r', 's', 1, 0)`.execute(
        db.db,
      );
      const l = await listOutputs(db);
      assert.ok("error" in l);
      assert.match(l.error.message, /stage1_outputs row \(x\).*source_updated_at/);
      // Nothing was lost: the damaged rows are still there, untouched, for a repair.
      const kept = await sql<{ status: string }>`select status from jobs where job_key = 'bad'`.execute(db.db);
      assert.deepEqual(
        kept.rows.map((r) => r.status),
        ["exploded"],
      );
      const outs = await sql<{
        source_updated_at: unknown;
      }>`select source_updated_at from stage1_outputs where thread_id = 'x'`.execute(db.db);
      assert.deepEqual(
        outs.rows.map((r) => r.source_updated_at),
        ["not-a-number"],
      );
      assert.match(l.error.message, /relay memories forget x/);
      // ...and forget is the repair.
      const { forgetThread } = await import("../../src/memories/store/outputs.ts");
      assert.equal(ok(await forgetThread(db, "x", NOW)), true);
      assert.equal(ok(await forgetThread(db, "bad", NOW)), true);
      assert.deepEqual(ok(await listOutputs(db)), []);
      assert.equal(ok(await claim(db, "fresh", 100)).kind, "claimed");
    } finally {
      await db.close();
    }
  });
});

describe("forget", { skip: sqliteSkip }, () => {
  test("a session forgotten before it was scanned is never extracted", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const { forgetThread } = await import("../../src/memories/store/outputs.ts");
      ok(await forgetThread(db, "t-later", NOW));
      ok(await upsertThreads(db, [thread("t-later", NOW * 1000 - 7 * HOUR, { memory_mode: "enabled" })]));
      const c = await candidates(db, { nowMs: NOW * 1000, maxAgeDays: 10, minIdleHours: 6, sources: ["cli"] }, 10);
      assert.deepEqual(
        c.map((t) => t.id),
        [],
      );
    } finally {
      await db.close();
    }
  });
});
