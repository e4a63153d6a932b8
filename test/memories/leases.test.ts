/**
 * Leases of `relay memories consolidate` after a crash: a holder that is gone (same host, its
 * process exited or its pid now runs something else; or its heartbeat is stale) is taken over
 * at once with a message; a live holder keeps its lease and is named; `status` lists leases.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, watch, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { processStart, workerIdFor } from "../../src/memories/holder.ts";
import type { StateDb } from "../../src/memories/store/db.ts";
import { heartbeatPhase2, tryClaimPhase2 } from "../../src/memories/store/phase2.ts";
import { tryClaimStage1 } from "../../src/memories/store/stage1.ts";
import { type FakeModelServer, hang, startFakeModelServer } from "../support/fake-model-server.ts";
import { relayArgv, useTestRelay } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";
import { until } from "../support/wait.ts";
import { HOUR, OFFLINE, ok, openDb, relay, sqliteSkip, type TempHome, tempHome, writeRollout } from "./support.ts";

const HOST = os.hostname();
const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Resolves once `file` exists, woken by fs.watch on the deepest folder of its path that exists. */
function whenExists(file: string): Promise<void> {
  return new Promise((resolve) => {
    const arm = () => {
      if (existsSync(file)) return resolve();
      let dir = path.dirname(file);
      while (!existsSync(dir)) dir = path.dirname(dir);
      const next = path.join(dir, path.relative(dir, file).split(path.sep)[0]!);
      const w = watch(dir, () => {
        w.close();
        arm();
      });
      // It may have appeared between the look and the watch: look again, now that the watch is on.
      if (existsSync(next)) {
        w.close();
        arm();
      }
    };
    arm();
  });
}

interface Blocked {
  child: ChildProcess;
  pid: number;
  exited: Promise<unknown>;
}

/**
 * A consolidate that holds the phase 2 lock: its agent consolidator runs `sleep 60` (scripted
 * model, real sandboxed command). Resolves once the command runs.
 */
async function consolidateHeldInPhase2(h: TempHome): Promise<Blocked> {
  writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["migrate the build to bun"] });
  const script = path.join(h.home, "agent-script.json");
  writeFileSync(
    script,
    JSON.stringify({
      turns: [
        {
          tool_calls: [
            { name: "exec_command", arguments: { cmd: "touch agent-started && sleep 60", yield_time_ms: 60000 } },
          ],
        },
        { text: "never reached" },
      ],
    }),
  );
  const [cmd, ...pre] = relayArgv();
  const child = spawn(
    cmd!,
    [...pre, "memories", "consolidate", "--extractor", "heuristic", "--consolidator", "agent", "--script", script],
    { env: { ...process.env, RELAY_HOME: h.home }, stdio: "ignore" },
  );
  const exited = new Promise((r) => child.once("exit", r));
  const started = await until(
    Promise.race([whenExists(path.join(h.memories, "agent-started")).then(() => true), exited.then(() => false)]),
    "the consolidation agent to start",
  );
  assert.ok(started, "the blocked consolidate exited before its agent started");
  return { child, pid: child.pid!, exited };
}

async function killed(b: Blocked): Promise<void> {
  if (b.child.exitCode === null && b.child.signalCode === null) process.kill(b.pid, "SIGKILL");
  await b.exited;
}

const phase2Skip = sqliteSkip || noSandboxHere();

describe("memories leases: the CLI", { skip: skipBecause("memories leases through the CLI", sqliteSkip) }, () => {
  // The consolidation agent always runs in the workspace-write sandbox.
  test("SIGKILL mid-phase-2: the rerun takes the lock over at once and says so", {
    skip: skipBecause("memories SIGKILL mid-phase-2", phase2Skip),
  }, async () => {
    useTestRelay();
    await using h = tempHome();
    const b = await consolidateHeldInPhase2(h);
    await killed(b);
    const rerun = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
    assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
    assert.match(
      rerun.stderr,
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\S+Z relay memories: took over the phase 2 lock from pid ${b.pid} on ${re(HOST)} \\(held since \\d{4}-[^)]*\\): the process is gone$`,
        "m",
      ),
    );
    const rep = JSON.parse(rerun.stdout);
    assert.equal(rep.phase2.status, "succeeded");
    assert.deepEqual([rep.phase2.takeover.holder.pid, rep.phase2.takeover.reason], [b.pid, "the process is gone"]);
    assert.ok(
      rep.phase2.changes.some((c: { path: string }) => c.path === "raw_memories.md"),
      "the killed run's inputs are still pending",
    );
  });

  test("a live holder keeps the lock: the second run exits 3 and names the holder and since when", {
    skip: skipBecause("memories live phase 2 holder", phase2Skip),
  }, async () => {
    useTestRelay();
    await using h = tempHome();
    const b = await consolidateHeldInPhase2(h);
    try {
      const second = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
      assert.equal(second.code, 3, second.stdout + second.stderr);
      assert.match(
        second.stdout,
        new RegExp(
          `phase2 skipped: another run holds the lock \\(held by pid ${b.pid} on ${re(HOST)} since \\d{4}-\\d\\d-\\d\\dT[^,]+, heartbeat \\d+ s ago\\)\\n$`,
        ),
      );
      assert.doesNotMatch(second.stderr, /took over/);
      const json = JSON.parse((await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"])).stdout);
      assert.deepEqual(
        [json.phase2.status, json.phase2.holder.pid, json.phase2.holder.host, json.phase2.holder.state],
        ["skipped_running", b.pid, HOST, "alive"],
      );
      assert.equal(b.child.exitCode, null, "the holder still runs");
    } finally {
      await killed(b);
    }
  });

  test("status shows held leases: host, pid, since, heartbeat age, and whether the holder is gone", {
    skip: skipBecause("memories status of leases", phase2Skip),
  }, async () => {
    useTestRelay();
    await using h = tempHome();
    const none = await relay(h.home, ["memories", "status"]);
    assert.match(none.stdout, /^leases held: none$/m);
    const b = await consolidateHeldInPhase2(h);
    try {
      const text = await relay(h.home, ["memories", "status"]);
      assert.match(
        text.stdout,
        new RegExp(
          `^leases held: 1\\n  phase 2 lock: pid ${b.pid} on ${re(HOST)} since \\d{4}-[^,]+, heartbeat \\d+ s ago \\(running\\)$`,
          "m",
        ),
      );
      const st = JSON.parse((await relay(h.home, ["memories", "status", "--json"])).stdout);
      assert.equal(st.leases.length, 1);
      const l = st.leases[0];
      assert.deepEqual([l.scope, l.key, l.host, l.pid, l.state], ["phase2", "global", HOST, b.pid, "alive"]);
      assert.ok(
        Date.parse(l.since) > 0 && typeof l.heartbeat_age_s === "number" && Date.parse(l.lease_until) > Date.now(),
      );
    } finally {
      await killed(b);
    }
    const after = JSON.parse((await relay(h.home, ["memories", "status", "--json"])).stdout);
    assert.equal(after.leases[0].state, "gone", "a killed holder is shown as gone");
    assert.match((await relay(h.home, ["memories", "status"])).stdout, /\(gone: the next consolidate takes it over\)/);
  });

  test("SIGKILL mid-phase-1 (extraction request held open): the rerun takes the claim over at once and says so", async () => {
    useTestRelay();
    await using h = tempHome();
    const server = await startFakeModelServer();
    try {
      await phase1KillAndRerun(h, server);
    } finally {
      await server.close();
    }
  });
});

/** Kills a consolidate whose phase 1 waits on a held model request, then reruns it offline. */
async function phase1KillAndRerun(h: TempHome, server: FakeModelServer): Promise<void> {
  const r = writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["document the release steps"] });
  writeFileSync(path.join(h.home, "config.toml"), `model = "m"\nbase_url = "${server.baseUrl}"\n`);
  server.enqueue(hang());
  const [cmd, ...pre] = relayArgv();
  const child = spawn(
    cmd!,
    [...pre, "memories", "consolidate", "--extractor", "model", "--consolidator", "heuristic"],
    { env: { ...process.env, RELAY_HOME: h.home, OPENAI_API_KEY: "k" }, stdio: "ignore" },
  );
  const exited = new Promise((res) => child.once("exit", res));
  await until(server.whenHolding(), "the extraction request");
  process.kill(child.pid!, "SIGKILL");
  await exited;
  const rerun = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"]);
  assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
  assert.match(
    rerun.stderr,
    new RegExp(
      `^\\d{4}-\\d\\d-\\d\\dT\\S+Z relay memories: took over 1 phase 1 claim from pid ${child.pid} on ${re(HOST)} \\(held since [^)]+\\): the process is gone$`,
      "m",
    ),
  );
  const rep = JSON.parse(rerun.stdout);
  assert.deepEqual(
    rep.phase1.takeovers.map((t: { thread_id: string }) => t.thread_id),
    [r.id],
  );
  assert.deepEqual(
    rep.phase1.outcomes.map((o: { status: string }) => o.status),
    ["succeeded"],
  );
}

/** The takeover rules, straight against the store: SQLite always, Postgres when a server is given. */
function judgeSuite(name: string, skip: string | false, open: (h: TempHome) => Promise<StateDb>) {
  const NOW = 1_800_000_000;
  const p2 = (db: StateDb, workerId: string, now = NOW) =>
    tryClaimPhase2(db, { workerId, leaseSeconds: 3600, cooldownSeconds: 0, now });
  describe(`memories leases: who may take over (${name})`, { skip }, () => {
    test("same host: a gone pid or a reused pid is taken over; the live process with its start time is not", async () => {
      await using h = tempHome();
      const db = await open(h);
      const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
      try {
        await until(new Promise((r) => sleeper.once("spawn", r)), "sleep to start");
        const live = workerIdFor({ host: HOST, pid: sleeper.pid!, start: processStart(sleeper.pid!) });
        assert.equal(ok(await p2(db, live)).kind, "claimed");
        const kept = ok(await p2(db, "other"));
        assert.ok(kept.kind === "skipped_running" && kept.holder.pid === sleeper.pid && kept.holder.state === "alive");
        // Same pid, another start time: the pid was reused, the holder is gone.
        await sql`update jobs set worker_id = ${workerIdFor({ host: HOST, pid: sleeper.pid!, start: "b000000000000t1" })}`.execute(
          db.db,
        );
        const reused = ok(await p2(db, "other"));
        assert.ok(reused.kind === "claimed" && reused.tookOver, JSON.stringify(reused));
        assert.equal(reused.tookOver.reason, `pid ${sleeper.pid} now belongs to another process (the holder is gone)`);
        const exitedChild = spawn("true", { stdio: "ignore" });
        await until(new Promise((r) => exitedChild.once("exit", r)), "true to exit");
        const gone = workerIdFor({ host: HOST, pid: exitedChild.pid!, start: "b000000000000t1" });
        await sql`update jobs set worker_id = ${gone}, ownership_token = 'x'`.execute(db.db);
        const took = ok(await p2(db, "third"));
        assert.ok(
          took.kind === "claimed" &&
            took.tookOver?.reason === "the process is gone" &&
            took.tookOver.holder.pid === exitedChild.pid,
        );
      } finally {
        sleeper.kill("SIGKILL");
        await db.close();
      }
    });

    test("another host: kept while it heartbeats, taken over once the heartbeat is stale", async () => {
      await using h = tempHome();
      const db = await open(h);
      try {
        const remote = workerIdFor({ host: "elsewhere.invalid", pid: 4242, start: "b0123456789abt99" });
        const a = ok(await p2(db, remote));
        assert.equal(a.kind, "claimed");
        const early = ok(await p2(db, "me", NOW + 200));
        assert.ok(
          early.kind === "skipped_running" &&
            early.holder.host === "elsewhere.invalid" &&
            early.holder.state === "unknown",
        );
        assert.ok(a.kind === "claimed" && ok(await heartbeatPhase2(db, a.token, 3600, NOW + 250)));
        assert.equal(ok(await p2(db, "me", NOW + 500)).kind, "skipped_running", "the heartbeat at +250 s keeps it");
        const late = ok(await p2(db, "me", NOW + 551));
        assert.ok(
          late.kind === "claimed" && late.tookOver?.reason === "its heartbeat is 301 s old (stale after 300 s)",
          JSON.stringify(late),
        );
        assert.equal(
          ok(await heartbeatPhase2(db, a.token, 3600, NOW + 552)),
          false,
          "the old holder has lost the lock",
        );
      } finally {
        await db.close();
      }
    });

    test("phase 1: a dead holder's claims are taken over and do not count against the running cap", async () => {
      await using h = tempHome();
      const db = await open(h);
      try {
        const exitedChild = spawn("true", { stdio: "ignore" });
        await until(new Promise((r) => exitedChild.once("exit", r)), "true to exit");
        const dead = workerIdFor({ host: HOST, pid: exitedChild.pid!, start: "b000000000000t1" });
        const claim = (threadId: string, workerId: string, maxRunningJobs = 1) =>
          tryClaimStage1(db, {
            threadId,
            sourceUpdatedAt: 100,
            workerId,
            leaseSeconds: 3600,
            maxRunningJobs,
            now: NOW,
          });
        assert.equal(ok(await claim("t1", dead)).kind, "claimed");
        assert.equal(
          ok(await claim("t2", "me")).kind,
          "claimed",
          "the dead holder's claim does not use up the cap of 1",
        );
        assert.equal(ok(await claim("t3", "me")).kind, "skipped_cap", "a live holder's claim does");
        const t1 = ok(await claim("t1", "you", 2));
        assert.ok(
          t1.kind === "claimed" &&
            t1.tookOver?.reason === "the process is gone" &&
            t1.tookOver.holder.pid === exitedChild.pid,
          JSON.stringify(t1),
        );
        const again = ok(await claim("t1", "someone", 8));
        assert.ok(again.kind === "skipped_running" && again.holder?.worker_id === "you", "a live holder is respected");
      } finally {
        await db.close();
      }
    });
  });
}

judgeSuite("SQLite", skipBecause("memories lease rules on SQLite", sqliteSkip), (h) => openDb(h.dbFile));

const PG = process.env.RELAY_TEST_POSTGRES_URL;
judgeSuite(
  "Postgres",
  skipBecause(
    "memories lease rules on Postgres",
    PG ? false : "RELAY_TEST_POSTGRES_URL is not set (start one with scripts/ci/postgres.sh)",
  ),
  async () => {
    const db = await openDb(PG!);
    for (const t of ["jobs", "stage1_outputs", "memory_threads", "relay_memory_migrations"])
      await sql`drop table if exists ${sql.table(t)}`.execute(db.db);
    await db.close();
    return openDb(PG!);
  },
);
