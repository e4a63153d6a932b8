import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { defaultMemorySettings } from "../../src/config/memories.ts";
import { heuristicConsolidator } from "../../src/memories/consolidate.ts";
import { heuristicExtractor } from "../../src/memories/extract.ts";
import { consolidateMemories } from "../../src/memories/pipeline.ts";
import { recordCitationUsage } from "../../src/memories/read.ts";
import { getOutput, listOutputs, recordUsage } from "../../src/memories/store/outputs.ts";
import { readPhase2Job } from "../../src/memories/store/phase2.ts";
import { markStage1Succeeded, tryClaimStage1 } from "../../src/memories/store/stage1.ts";
import { relayArgv } from "../support/self.ts";
import { assertUpsertsInOrder, HOUR, openDb, tempHome, writeRollout } from "./support.ts";

const URL_ = process.env.RELAY_TEST_POSTGRES_URL;
const skip = URL_ ? false : "RELAY_TEST_POSTGRES_URL is not set (start one with scripts/ci/postgres.sh)";

async function freshDb() {
  const db = await openDb(URL_!);
  for (const t of [
    "jobs",
    "stage1_outputs",
    "memory_threads",
    "relay_memory_migrations",
    "relay_memory_migrations_lock",
  ]) {
    await sql`drop table if exists ${sql.table(t)}`.execute(db.db);
  }
  await db.close();
  return openDb(URL_!);
}

describe("Postgres state DB", { skip }, () => {
  test("claims are exclusive across connections; the whole pipeline runs; bigint columns come back as numbers", async () => {
    await using h = tempHome();
    const db = await freshDb();
    const db2 = await openDb(URL_!);
    try {
      const claim = (d: typeof db, w: string) =>
        tryClaimStage1(d, {
          threadId: "t-x",
          sourceUpdatedAt: 100,
          workerId: w,
          leaseSeconds: 60,
          maxRunningJobs: 8,
          now: 1000,
        });
      const [a, b] = await Promise.all([claim(db, "A"), claim(db2, "B")]);
      const kinds = [a, b].map((r) => ("ok" in r ? r.ok.kind : r.error.message)).sort();
      assert.deepEqual(kinds, ["claimed", "skipped_running"]);

      for (let i = 0; i < 3; i++)
        writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR - i * 60_000, user: [`task number ${i}`] });
      const r = await consolidateMemories({
        state: db,
        relayHome: h.home,
        memoriesRoot: h.memories,
        settings: defaultMemorySettings(),
        extractor: heuristicExtractor,
        consolidator: heuristicConsolidator,
      });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.equal(r.ok.phase1!.claimed, 3);
      assert.equal(r.ok.phase2!.status, "succeeded");
      assert.match(readFileSync(path.join(h.memories, "raw_memories.md"), "utf8"), /task number 2/);
      const outs = await listOutputs(db);
      assert.ok("ok" in outs && outs.ok.length === 3);
      assert.equal(typeof outs.ok[0]!.source_updated_at, "number");
      const used = await recordUsage(db, [outs.ok[0]!.thread_id, outs.ok[0]!.thread_id], 2000);
      assert.deepEqual(used, { ok: 2 });
      const job = await readPhase2Job(db);
      assert.ok("ok" in job && job.ok?.status === "done" && typeof job.ok.last_success_watermark === "number");
    } finally {
      await db.close();
      await db2.close();
    }
  });

  test("[memories] db sends citation usage to Postgres; RELAY_MEMORIES_DB points the CLI there", async () => {
    await using h = tempHome();
    const db = await freshDb();
    try {
      const c = await tryClaimStage1(db, {
        threadId: "t-cite",
        sourceUpdatedAt: 100,
        workerId: "w",
        leaseSeconds: 60,
        maxRunningJobs: 8,
        now: 1000,
      });
      assert.ok("ok" in c && c.ok.kind === "claimed");
      await markStage1Succeeded(
        db,
        "t-cite",
        c.ok.token,
        100,
        { rawMemory: "r", rolloutSummary: "s", rolloutSlug: null },
        1000,
      );
      writeFileSync(path.join(h.home, "config.toml"), `[memories]\ndb = ${JSON.stringify(URL_)}\n`);
      const cited =
        "ok\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-2|note=[x]\n</citation_entries>\n<rollout_ids>\nt-cite\n</rollout_ids>\n</oai-mem-citation>";
      assert.deepEqual(await recordCitationUsage(h.home, cited), { ok: 1 });
      const o = await getOutput(db, "t-cite");
      assert.ok("ok" in o && o.ok?.usage_count === 1);
      const [cmd, ...pre] = relayArgv();
      const st = spawnSync(cmd!, [...pre, "memories", "status", "--json"], {
        env: { ...process.env, RELAY_HOME: h.home, RELAY_MEMORIES_DB: URL_! },
        encoding: "utf8",
      });
      assert.equal(st.status, 0, st.stderr);
      const out = JSON.parse(st.stdout);
      assert.match(out.db, /^postgres:\/\/relay:\*\*\*@/, "the password is not printed");
      assert.equal(out.outputs, 1);
    } finally {
      await db.close();
    }
  });

  test("two hosts run phase 1 at once against one Postgres DB; one consolidates", async () => {
    await using a = tempHome();
    await using b = tempHome();
    await (await freshDb()).close();
    const now = Date.now();
    for (let i = 0; i < 4; i++)
      writeRollout(a.home, { mtimeMs: now - 7 * HOUR - i * 60_000, user: [`host a task ${i}`] });
    for (let i = 0; i < 4; i++)
      writeRollout(b.home, { mtimeMs: now - 7 * HOUR - i * 60_000, user: [`host b task ${i}`] });
    const [cmd, ...pre] = relayArgv();
    const run = (home: string, host: string, extra: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const p = spawn(
          cmd!,
          [
            ...pre,
            "memories",
            "consolidate",
            "--extractor",
            "heuristic",
            "--consolidator",
            "heuristic",
            "--json",
            ...extra,
          ],
          {
            env: { ...process.env, RELAY_HOME: home, RELAY_MEMORIES_DB: URL_!, RELAY_MEMORIES_HOST: host },
          },
        );
        let out = "";
        let err = "";
        p.stdout.on("data", (d) => (out += d));
        p.stderr.on("data", (d) => (err += d));
        p.on("close", (code) => resolve({ code, out, err }));
      });
    const [ra, rb] = await Promise.all([run(a.home, "host-a", []), run(b.home, "host-b", ["--skip-phase2"])]);
    assert.equal(rb.code, 0, rb.err);
    assert.ok(ra.code === 0, ra.err);
    const repB = JSON.parse(rb.out);
    assert.equal(repB.phase2, undefined);
    assert.deepEqual([JSON.parse(ra.out).phase1.claimed, repB.phase1.claimed], [4, 4]);
    assert.ok(repB.phase1.outcomes.every((o: { status: string }) => o.status === "succeeded"));
    // The consolidating host picks up what the other host extracted.
    const again = await run(a.home, "host-a", ["--skip-phase1"]);
    assert.equal(again.code, 0, again.err);
    const raw = readFileSync(path.join(a.memories, "raw_memories.md"), "utf8");
    for (let i = 0; i < 4; i++)
      assert.ok(raw.includes(`host a task ${i}`) && raw.includes(`host b task ${i}`), raw.slice(0, 400));
  });

  test("a session listed twice in one upsert (a resumed copy in both homes) is stored as one upsert after the other", async () => {
    const db = await freshDb();
    try {
      await assertUpsertsInOrder(db);
    } finally {
      await db.close();
    }
  });

  test("a damaged row is a clear error", async () => {
    const db = await freshDb();
    try {
      await sql`insert into jobs (kind, job_key, status, retry_remaining) values ('memory_stage1', 'bad', 'exploded', 3)`.execute(
        db.db,
      );
      const r = await tryClaimStage1(db, {
        threadId: "bad",
        sourceUpdatedAt: 1,
        workerId: "w",
        leaseSeconds: 60,
        maxRunningJobs: 8,
        now: 10,
      });
      assert.ok("error" in r && r.error.code === "db_corrupt");
    } finally {
      await db.close();
    }
  });
});
