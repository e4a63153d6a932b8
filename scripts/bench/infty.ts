/**
 * relay infty's own costs, beside the models': what a handoff adds (the run.json write, the
 * index, the checkpoint commit), a checkpoint with a changed artifact, a whole scripted Solver
 * turn end to end, and reading a role's JSON out of a long prose reply.
 *   bun scripts/bench/infty.ts [--n 100] [--turns 100]
 * Prints a table, then `name value goal OK|MISS` lines. The run.json write (temp file, fsync,
 * rename) is the baseline measured in the same process: the checkpoint's ratio to it is what
 * stays comparable on a noisy machine.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultConfig } from "../../src/config/config.ts";
import { takeCheckpoint } from "../../src/infty/checkpoints.ts";
import { writeIndexes } from "../../src/infty/index-files.ts";
import { FileLease } from "../../src/infty/lease-file.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { readContract, SolverSignalSchema } from "../../src/infty/signals.ts";
import { createScriptedClient } from "../../src/model/scripted.ts";
import { fmtMs, goalLine, numberFlag, printTable, summarize, timeEach, useSourceRelay } from "./stats.ts";

const N = numberFlag("--n", 100);
const TURNS = numberFlag("--turns", 100);

async function storeCosts(home: string) {
  const created = await RunStore.create(
    home,
    { run_id: "bench", objective: "o", verifiers: 1, consensus: "all", max_turns: 10, max_wall_ms: 60_000 },
    null,
  );
  if ("error" in created) throw new Error(created.error.message);
  const s = created.ok;
  for (let i = 0; i < 20; i++)
    writeFileSync(path.join(s.dir, "artifacts", `file-${i}.txt`), `artifact ${i}\n`.repeat(200));
  await takeCheckpoint(s, "handoff", "first: every file hashed");
  const runJson = await timeEach(N, (i) => s.update({ handoffs: i }));
  // The same write by a driver holding the run's lease: each is fenced (the lease read first).
  const lease = await new FileLease(s.dir, "bench").acquire();
  if ("error" in lease) throw new Error(lease.error.message);
  await s.fenceWith(lease.ok);
  const fenced = await timeEach(N, (i) => s.update({ handoffs: i }));
  const beat = await timeEach(N, () => s.heartbeat(0));
  const index = await timeEach(N, () => writeIndexes(s));
  const unchanged = await timeEach(N, (i) => takeCheckpoint(s, "handoff", `unchanged ${i}`));
  const big = Buffer.alloc(1 << 20, 97);
  const changed = await timeEach(Math.min(N, 30), async (i) => {
    big[0] = 48 + (i % 10);
    writeFileSync(path.join(s.dir, "artifacts", "big.bin"), big);
    await takeCheckpoint(s, "handoff", `changed ${i}`);
  });
  return {
    runJson: summarize(runJson),
    fenced: summarize(fenced),
    beat: summarize(beat),
    index: summarize(index),
    unchanged: summarize(unchanged),
    changed: summarize(changed),
  };
}

/** A Solver that never signals: every turn is a model turn, a handoff, the index and a checkpoint. */
async function turnCost(home: string) {
  useSourceRelay();
  const solver = createScriptedClient({
    script: { turns: Array.from({ length: TURNS * 2 }, () => ({ text: "still working" })) },
  });
  const config = { ...defaultConfig(), model: "scripted", sandbox_mode: "danger-full-access" as const };
  const t = performance.now();
  const r = await runInfty({
    home,
    config,
    objective: "o",
    runId: "turns",
    verifiers: 0,
    maxTurns: TURNS,
    maxNudges: Number.MAX_SAFE_INTEGER,
    modelFor: (role) => (role === "solver" ? solver : undefined),
    report: () => {},
    signal: new AbortController().signal,
  });
  if ("error" in r || r.ok.status !== "budget_exhausted")
    throw new Error(`the scripted run did not use its budget: ${JSON.stringify(r)}`);
  return (performance.now() - t) / TURNS;
}

function parseCost() {
  const prose = `${"I looked at every file and ran the tests; here is what I found. ".repeat(300)}\n\`\`\`json\n{"type": "verification_request", "claim_path": "memory/claims/a.json"}\n\`\`\`\nThanks.`;
  const samples: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const r = readContract(SolverSignalSchema, prose);
    samples.push(performance.now() - t);
    if ("error" in r) throw new Error(r.error.message);
  }
  return { bytes: prose.length, s: summarize(samples) };
}

const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-infty-"));
try {
  const c = await storeCosts(home);
  const perTurn = await turnCost(home);
  const parse = parseCost();
  printTable([
    ["what", "p50", "p95", "n"],
    ["run.json write (baseline)", fmtMs(c.runJson.p50), fmtMs(c.runJson.p95), String(c.runJson.n)],
    ["run.json write, fenced by the lease", fmtMs(c.fenced.p50), fmtMs(c.fenced.p95), String(c.fenced.n)],
    ["heartbeat (lease renewed + run.json)", fmtMs(c.beat.p50), fmtMs(c.beat.p95), String(c.beat.n)],
    ["index files", fmtMs(c.index.p50), fmtMs(c.index.p95), String(c.index.n)],
    ["checkpoint, unchanged store", fmtMs(c.unchanged.p50), fmtMs(c.unchanged.p95), String(c.unchanged.n)],
    ["checkpoint, 1 MiB artifact changed", fmtMs(c.changed.p50), fmtMs(c.changed.p95), String(c.changed.n)],
    [`read a signal from ${parse.bytes} bytes of prose`, fmtMs(parse.s.p50), fmtMs(parse.s.p95), String(parse.s.n)],
  ]);
  console.log(goalLine("infty_fenced_vs_runjson_write_ratio", c.fenced.p50 / c.runJson.p50, 1.15));
  console.log(goalLine("infty_checkpoint_unchanged_ms_p50", c.unchanged.p50, 20));
  console.log(goalLine("infty_checkpoint_vs_runjson_write_ratio", c.unchanged.p50 / c.runJson.p50, 15));
  console.log(goalLine("infty_checkpoint_1mib_changed_ms_p50", c.changed.p50, 60));
  console.log(goalLine("infty_scripted_solver_turn_ms", perTurn, 60));
  console.log(goalLine("infty_read_signal_from_prose_ms_p50", parse.s.p50, 1, 3));
} finally {
  rmSync(home, { recursive: true, force: true });
}
