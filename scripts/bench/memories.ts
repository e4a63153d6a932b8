/**
 * Memories benchmark: phase 1 (heuristic extractor) over N synthetic rollouts and phase 2
 * (heuristic consolidator, git baseline) over M stored summaries; prints time and peak RSS.
 *   bun scripts/bench/memories.ts [--rollouts 2000] [--summaries 1000] [--db postgres://... [--reset]]
 * A --db must hold no memories yet; --reset drops its memory tables first (destroys them).
 *   bun scripts/bench/memories.ts --scale [--sizes 2000,20000]
 * runs phase 1 alone at each size, each in a fresh process (see memories-scale.ts), and prints
 * `name value goal OK|MISS` lines: seconds, peak RSS and heap per size, and the time ratio.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { heuristicConsolidator } from "../../src/memories/consolidate.ts";
import { runPhase1 } from "../../src/memories/phase1.ts";
import { runPhase2 } from "../../src/memories/phase2.ts";
import { openStateDb } from "../../src/memories/store/db.ts";
import { writeRollout } from "../../test/memories/support.ts";
import { benchRollout, runScale } from "./memories-scale.ts";
import { benchPhase1 } from "./memories-scale-child.ts";
import { numberFlag } from "./stats.ts";

if (process.argv.includes("--scale")) {
  await runScale();
  process.exit(0);
}

const N = numberFlag("--rollouts", 2000);
const M = numberFlag("--summaries", 1000);
const dbAt = process.argv.indexOf("--db");
const dbSpec = dbAt >= 0 ? (process.argv[dbAt + 1] ?? "") : "";

let peak = 0;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;

const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-mem-"));
try {
  const now = Date.now();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) writeRollout(home, benchRollout(i, now));
  const tGen = performance.now() - t0;
  const opened = await openStateDb(dbSpec || path.join(home, "state.sqlite"));
  if ("error" in opened) throw new Error(opened.error.message);
  let state = opened.ok;
  if (dbSpec) {
    if (process.argv.includes("--reset")) {
      for (const t of ["jobs", "stage1_outputs", "memory_threads", "relay_memory_migrations"])
        await sql`drop table if exists ${sql.table(t)}`.execute(state.db);
      await state.close();
      const again = await openStateDb(dbSpec);
      if ("error" in again) throw new Error(again.error.message);
      state = again.ok;
    }
    const n = await state.db
      .selectFrom("stage1_outputs")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    if (Number(n?.n ?? 0) > 0)
      throw new Error(`${state.location} already holds memories: pass --reset to drop its memory tables first`);
  }
  const t1 = performance.now();
  const p1 = await runPhase1(benchPhase1(state, home, now, N));
  if ("error" in p1) throw new Error(p1.error.message);
  const tP1 = performance.now() - t1;
  const peak1 = peak;
  const root = path.join(home, "memories");
  const t2 = performance.now();
  const p2 = await runPhase2({
    state,
    root,
    consolidator: heuristicConsolidator,
    workerId: "bench",
    now: () => now,
    maxRawMemories: M,
    maxUnusedDays: 90,
    cooldownSeconds: 0,
  });
  if ("error" in p2) throw new Error(p2.error.message);
  const tP2 = performance.now() - t2;
  const t3 = performance.now();
  const p2b = await runPhase2({
    state,
    root,
    consolidator: heuristicConsolidator,
    workerId: "bench",
    now: () => now,
    maxRawMemories: M,
    maxUnusedDays: 90,
    cooldownSeconds: 0,
  });
  if ("error" in p2b) throw new Error(p2b.error.message);
  const tP2b = performance.now() - t3;
  await state.close();
  clearInterval(sampler);
  const ok = p1.ok.outcomes.filter((o) => o.status === "succeeded").length;
  const deno = (globalThis as { Deno?: { version: { deno: string } } }).Deno;
  const runtime = process.versions.bun
    ? `bun ${process.versions.bun}`
    : deno
      ? `deno ${deno.version.deno}`
      : `node ${process.versions.node}`;
  console.log(`runtime: ${runtime}; db: ${state.kind}`);
  console.log(`generate ${N} rollouts: ${tGen.toFixed(0)} ms`);
  console.log(
    `phase 1: scanned ${p1.ok.scanned}, claimed ${p1.ok.claimed}, stored ${ok} in ${tP1.toFixed(0)} ms (${(tP1 / Math.max(1, p1.ok.claimed)).toFixed(2)} ms/rollout); peak RSS ${mb(peak1)}`,
  );
  console.log(
    `phase 2 (first, ${p2.ok.inputs} summaries, ${p2.ok.changes.length} changed files): ${p2.ok.status} in ${tP2.toFixed(0)} ms`,
  );
  console.log(`phase 2 (rerun, no changes): ${p2b.ok.status} in ${tP2b.toFixed(0)} ms`);
  console.log(`peak RSS overall: ${mb(peak)}`);
} finally {
  clearInterval(sampler);
  rmSync(home, { recursive: true, force: true });
}
