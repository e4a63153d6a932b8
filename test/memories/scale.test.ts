/**
 * Phase 1 at scale, without clocks: a rollout is streamed (the reader never holds more than a
 * chunk and a line however large the file), claiming n rollouts costs O(n) statements and rows
 * read, not O(n²) (the claim loop used to re-read every running job for each claim), and a run
 * holds a page of rows and claims at a time, not all n.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KyselyPlugin } from "kysely";
import { heuristicExtractor } from "../../src/memories/extract.ts";
import { readMemoryRollout } from "../../src/memories/filter.ts";
import { CLAIM_BATCH, type Phase1Options, runPhase1 } from "../../src/memories/phase1.ts";
import { SCAN_PAGE } from "../../src/memories/scan.ts";
import type { StateDb } from "../../src/memories/store/db.ts";
import { tryClaimStage1, tryClaimStage1Batch } from "../../src/memories/store/stage1.ts";
import type { MessageItem } from "../../src/model/items.ts";
import { visitRollout } from "../../src/rollout/reader.ts";
import { HOUR, ok, openDb, sqliteSkip, tempHome, writeRollout } from "./support.ts";

const MB = 1024 * 1024;
const CHUNK = 64 * 1024;
const ts = "2026-01-01T00:00:00.000Z";
const META = JSON.stringify({
  timestamp: ts,
  type: "session_meta",
  payload: { id: "s", timestamp: ts, cwd: "/w", originator: "relay", cli_version: "0", source: "cli" },
});

/** Line k of a huge rollout: mostly reasoning (dropped by phase 1), every 1000th a user request. */
function hugeLine(k: number): string {
  const payload =
    k % 1000 === 0
      ? { type: "message", role: "user", content: [{ type: "input_text", text: `request ${k}` }] }
      : { type: "reasoning", summary: [{ type: "summary_text", text: `step ${k} ${"x".repeat(900)}` }] };
  return JSON.stringify({ timestamp: ts, type: "response_item", payload });
}

/**
 * About `total` bytes of rollout, made lazily in 64 KiB chunks (the test never holds the whole
 * file either). `ends` gets the byte offset where each line ends; `produced` counts bytes handed out.
 */
function hugeRollout(total: number) {
  const ends: number[] = [];
  const state = { produced: 0 };
  async function* source(): AsyncGenerator<Uint8Array> {
    let pending = Buffer.from(`${META}\n`);
    ends.push(pending.length);
    let made = pending.length;
    for (let k = 1; made < total; k++) {
      const line = Buffer.from(`${hugeLine(k)}\n`);
      made += line.length;
      ends.push(made);
      pending = Buffer.concat([pending, line]);
      while (pending.length >= CHUNK) {
        state.produced += CHUNK;
        yield pending.subarray(0, CHUNK);
        pending = pending.subarray(CHUNK);
      }
    }
    state.produced += pending.length;
    yield pending;
  }
  return { source: source(), ends, state };
}

describe("phase 1 at scale", () => {
  test("a 50 MB rollout is streamed: the reader never runs more than a chunk and a line ahead of its consumer", async () => {
    const huge = hugeRollout(50 * MB);
    let line = 0;
    let maxAhead = 0;
    const r = await visitRollout(
      "huge.jsonl",
      () => {
        // Bytes read from the source but not yet delivered as lines: what the reader holds.
        maxAhead = Math.max(maxAhead, huge.state.produced - huge.ends[line++]!);
      },
      huge.source,
    );
    ok(r);
    assert.equal(line, huge.ends.length, "every line was delivered");
    assert.ok(huge.state.produced >= 50 * MB);
    assert.ok(maxAhead <= CHUNK, `the reader held ${maxAhead} bytes ahead of its consumer`);
  });

  test("phase 1's reader keeps only the memory items of a 50 MB rollout", async () => {
    const huge = hugeRollout(50 * MB);
    const items = ok(await readMemoryRollout("huge.jsonl", huge.source)).items;
    const lines = huge.ends.length - 1;
    assert.equal(items.length, Math.floor(lines / 1000));
    assert.ok(items.every((i) => i.type === "message" && (i as MessageItem).role === "user"));
    assert.ok(huge.state.produced >= 50 * MB);
  });
});

/** Counts the statements run on `state` (transactions included), the rows they return, and the most one returned. */
function counting(state: StateDb) {
  const n = { statements: 0, rows: 0, maxRows: 0 };
  const plugin: KyselyPlugin = {
    transformQuery: (a) => {
      n.statements++;
      return a.node;
    },
    transformResult: async (a) => {
      n.rows += a.result.rows.length;
      n.maxRows = Math.max(n.maxRows, a.result.rows.length);
      return a.result;
    },
  };
  const counted: StateDb = {
    ...state,
    db: state.db.withPlugin(plugin),
    exclusive: (fn) => state.exclusive((t) => fn(t.withPlugin(plugin))),
  };
  return { state: counted, n };
}

async function phase1Cost(rollouts: number): Promise<{ statements: number; rows: number }> {
  await using h = tempHome();
  const now = Date.now();
  for (let i = 0; i < rollouts; i++)
    writeRollout(h.home, {
      mtimeMs: now - 7 * HOUR - i * 60_000,
      user: [`task ${i}`],
      commands: [`bun test t${i}.ts`],
    });
  const db = await openDb(h.dbFile);
  try {
    const c = counting(db);
    const rep = ok(
      await runPhase1({
        state: c.state,
        relayHome: h.home,
        extractor: heuristicExtractor,
        workerId: "w",
        now: () => now,
        maxAgeDays: 10,
        minIdleHours: 6,
        maxClaims: rollouts,
        maxRunningJobs: rollouts,
        concurrency: 4,
      }),
    );
    assert.equal(rep.outcomes.filter((o) => o.status === "succeeded").length, rollouts);
    return { statements: c.n.statements, rows: c.n.rows };
  } finally {
    await db.close();
  }
}

describe("claiming at scale", { skip: sqliteSkip }, () => {
  test("phase 1 over 4x the rollouts costs about 4x the statements and rows read (claiming is not quadratic)", async () => {
    const small = await phase1Cost(25);
    const large = await phase1Cost(100);
    // Quadratic claiming (every running job re-read per claim) read ~n²/2 rows: 16x here.
    assert.ok(large.rows <= 4.5 * small.rows, `rows read: ${small.rows} for 25 rollouts, ${large.rows} for 100`);
    assert.ok(
      large.statements <= 4.5 * small.statements,
      `statements: ${small.statements} for 25 rollouts, ${large.statements} for 100`,
    );
    // Claims are batched: about one statement per claim, plus one transaction per stored result.
    assert.ok(large.statements / 100 <= 12, `${large.statements} statements for 100 rollouts`);
  });

  test("a batch of claims respects the cap on running jobs: live claims of others count, its own as it makes them, dead holders' not", async () => {
    await using h = tempHome();
    const db = await openDb(h.dbFile);
    try {
      const takeOver = (j: { worker_id: string | null }) => (j.worker_id === "dead" ? "the holder is gone" : undefined);
      const base = { workerId: "w1", leaseSeconds: 3600, maxRunningJobs: 6, now: 1000, takeOver };
      for (const [id, w] of [
        ["o1", "w2"],
        ["o2", "w2"],
        ["o3", "dead"],
      ] as const) {
        assert.equal(
          ok(await tryClaimStage1(db, { ...base, workerId: w, threadId: id, sourceUpdatedAt: 100 })).kind,
          "claimed",
        );
      }
      const threads = Array.from({ length: 6 }, (_, i) => ({ threadId: `t${i}`, sourceUpdatedAt: 100 }));
      const kinds = ok(await tryClaimStage1Batch(db, { ...base, threads })).map((c) => c.kind);
      assert.deepEqual(kinds, ["claimed", "claimed", "claimed", "claimed", "skipped_cap", "skipped_cap"]);
      const more = [...threads, { threadId: "t6", sourceUpdatedAt: 100 }, { threadId: "t7", sourceUpdatedAt: 100 }];
      const again = ok(await tryClaimStage1Batch(db, { ...base, maxRunningJobs: 100, threads: more, limit: 2 })).map(
        (c) => c.kind,
      );
      assert.deepEqual(
        again,
        ["skipped_running", "skipped_running", "skipped_running", "skipped_running", "claimed", "claimed"],
        "stops after `limit` claims",
      );
      const third = ok(
        await tryClaimStage1Batch(db, {
          ...base,
          maxRunningJobs: 100,
          threads: [
            { threadId: "o3", sourceUpdatedAt: 100 },
            { threadId: "o1", sourceUpdatedAt: 100 },
          ],
        }),
      );
      assert.deepEqual(
        third.map((c) => c.kind),
        ["claimed", "skipped_running"],
        "the dead holder's claim is taken over, the live one respected",
      );
    } finally {
      await db.close();
    }
  });
});

/** `rollouts` claimable rollouts, newest first one minute apart; `now` is when phase 1 runs. */
function writeMany(home: string, rollouts: number, now: number): void {
  for (let i = 0; i < rollouts; i++)
    writeRollout(home, { mtimeMs: now - 7 * HOUR - i * 60_000, user: [`task ${i}`], commands: [`bun test t${i}.ts`] });
}

const phase1Options = (state: StateDb, home: string, now: number, over: Partial<Phase1Options>): Phase1Options => ({
  state,
  relayHome: home,
  extractor: heuristicExtractor,
  workerId: "w",
  now: () => now,
  maxAgeDays: 10,
  minIdleHours: 6,
  maxClaims: 10_000,
  maxRunningJobs: 10_000,
  concurrency: 4,
  ...over,
});

describe("paging", { skip: sqliteSkip }, () => {
  test("phase 1 holds one page of rows and claims at a time, whatever the number of rollouts", async () => {
    const n = 2 * CLAIM_BATCH + 50;
    await using h = tempHome();
    const now = Date.now();
    writeMany(h.home, n, now);
    const db = await openDb(h.dbFile);
    try {
      const c = counting(db);
      const pages: Array<{ rows: number; claims: number }> = [];
      // Claimed but not yet extracted: the jobs this run holds as running when each extraction starts.
      let maxRunning = 0;
      const extractor: Phase1Options["extractor"] = async (input, signal) => {
        const r = await db.db
          .selectFrom("jobs")
          .select((eb) => eb.fn.countAll().as("n"))
          .where("status", "=", "running")
          .executeTakeFirst();
        maxRunning = Math.max(maxRunning, Number(r?.n ?? 0));
        return heuristicExtractor(input, signal);
      };
      const first = ok(
        await runPhase1(phase1Options(c.state, h.home, now, { extractor, onPage: (p) => pages.push(p) })),
      );
      assert.equal(first.outcomes.filter((o) => o.status === "succeeded").length, n);
      assert.deepEqual(pages, [
        { rows: CLAIM_BATCH, claims: CLAIM_BATCH },
        { rows: CLAIM_BATCH, claims: CLAIM_BATCH },
        { rows: 50, claims: 50 },
      ]);
      assert.ok(maxRunning <= CLAIM_BATCH, `${maxRunning} claims were running at once`);
      // A rerun reads the catalog back: a page of rows per query, never the whole table.
      const again = ok(await runPhase1(phase1Options(c.state, h.home, now, {})));
      assert.equal(again.skipped.by_reason.up_to_date, n);
      assert.ok(c.n.maxRows <= Math.max(SCAN_PAGE, CLAIM_BATCH), `one statement returned ${c.n.maxRows} rows`);
    } finally {
      await db.close();
    }
  });

  test("claims this run already extracted still count against max_running_jobs", async () => {
    const n = 2 * CLAIM_BATCH + 50;
    const cap = CLAIM_BATCH + 50;
    await using h = tempHome();
    const now = Date.now();
    writeMany(h.home, n, now);
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(await runPhase1(phase1Options(db, h.home, now, { maxRunningJobs: cap })));
      // The first page was extracted before the second was claimed; the cap still stops at `cap`, as when all were claimed first.
      assert.equal(rep.claimed, cap);
      assert.equal(rep.skipped.by_reason.running_cap, n - cap);
      assert.equal(rep.skipped.by_reason.running, 0, "no other worker holds any");
      assert.equal(rep.skipped.max_running_jobs, cap);
      assert.equal(rep.outcomes.filter((o) => o.status === "succeeded").length, cap);
    } finally {
      await db.close();
    }
  });
});
