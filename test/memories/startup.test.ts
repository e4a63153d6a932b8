/**
 * The start-up pass (src/memories/startup.ts): real `relay run` processes, the real SQLite store,
 * and the pass's own log as the event to wait for (its last line comes after it closed the DB).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { defaultMemorySettings } from "../../src/config/memories.ts";
import { STAGE1_SYSTEM } from "../../src/memories/prompts.ts";
import { mayHaveWork, startupLogPath } from "../../src/memories/startup.ts";
import { listOutputs } from "../../src/memories/store/outputs.ts";
import { readStage1Job } from "../../src/memories/store/stage1.ts";
import { upsertThreads } from "../../src/memories/store/threads.ts";
import { later, type Reply, reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { deferred, waitFor } from "../support/wait.ts";
import { HOUR, OFFLINE, ok, openDb, relay, sqliteSkip, type TempHome, tempHome, writeRollout } from "./support.ts";

/** Never a sub-session, whatever runs the tests. */
const ENV = { RELAY_SESSION_ID: "", RELAY_MEMORIES_DB: "", NO_COLOR: "1" };

function scripted(h: TempHome): string[] {
  const script = path.join(h.home, "session-script.json");
  writeFileSync(script, JSON.stringify({ turns: [{ text: "all done" }] }));
  const ws = path.join(h.home, "ws");
  mkdirSync(ws, { recursive: true });
  return ["run", "--script", script, "--approval", "never", "--sandbox", "danger-full-access", "-C", ws];
}

function passLines(h: TempHome): string[] {
  if (!existsSync(startupLogPath(h.home))) return [];
  return readFileSync(startupLogPath(h.home), "utf8")
    .split("\n")
    .filter((l) => l.includes("relay memories start-up"));
}

/** The final lines of finished passes (done, skipped, failed, not run). */
const ends = (h: TempHome) => passLines(h).filter((l) => /\]: (done|skipped|failed|not run|bad)/.test(l));

async function passesEnded(h: TempHome, n: number): Promise<string[]> {
  await waitFor(() => ends(h).length >= n, `${n} start-up pass(es) to end (log: ${startupLogPath(h.home)})`);
  return ends(h);
}

const MEMORY_TEXT = /memor|phase ?[12]|start-up|consolidat/i;

describe("memories start-up pass", { skip: sqliteSkip }, () => {
  test("relay run claims earlier idle rollouts in the background, at most max_rollouts_per_startup; a second start-up within the interval does nothing", async () => {
    await using h = tempHome();
    const old = [0, 1, 2].map((i) =>
      writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR - i * 60_000, user: [`task number ${i}`] }),
    );
    const run = await relay(h.home, [...scripted(h), "--json", "say hi"], ENV);
    assert.equal(run.code, 0, run.stderr);
    // The session's output and its --json events carry nothing of the pass.
    assert.doesNotMatch(run.stdout + run.stderr, MEMORY_TEXT);
    const events = run.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; session_id?: string });
    const sessionId = events.find((e) => e.type === "session_started")?.session_id;
    assert.ok(sessionId);

    const [end] = await passesEnded(h, 1);
    assert.match(end!, /done: phase1 scanned=4 claimed=2 ok=2 .*phase2 consolidated/);
    assert.ok(passLines(h).some((l) => l.includes(`started for session ${sessionId}`)));
    const state = await openDb(h.dbFile);
    try {
      const ids = ok(await listOutputs(state))
        .map((o) => o.thread_id)
        .sort();
      assert.deepEqual(
        ids,
        [old[0]!.id, old[1]!.id].sort(),
        "the two newest eligible rollouts (default max_rollouts_per_startup = 2)",
      );
      assert.ok(existsSync(path.join(h.memories, "memory_summary.md")), "phase 2 ran");

      const again = await relay(h.home, [...scripted(h), "say hi again"], ENV);
      assert.equal(again.code, 0, again.stderr);
      assert.doesNotMatch(again.stdout + again.stderr, MEMORY_TEXT);
      const second = (await passesEnded(h, 2))[1]!;
      assert.match(second, /skipped: the last start-up pass began \d+ s ago \(min_startup_interval_seconds = 3600\)/);
      assert.equal(ok(await listOutputs(state)).length, 2);
      assert.ok(!ok(await readStage1Job(state, old[2]!.id)), "the third rollout was not claimed");
    } finally {
      await state.close();
    }
  });

  test("nothing starts with generate_memories = false, nor in a sub-session", async () => {
    await using h = tempHome();
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    writeFileSync(path.join(h.home, "config.toml"), "[memories]\ngenerate_memories = false\n");
    const off = await relay(h.home, [...scripted(h), "say hi"], ENV);
    assert.equal(off.code, 0, off.stderr);
    writeFileSync(path.join(h.home, "config.toml"), "");
    const sub = await relay(h.home, [...scripted(h), "say hi"], {
      ...ENV,
      RELAY_SESSION_ID: "01a23646-6e19-7782-85a7-75a766c37038",
    });
    assert.equal(sub.code, 0, sub.stderr);
    // The session writes the "started" line itself before it exits: its absence is final.
    assert.deepEqual(passLines(h), []);
    assert.equal(existsSync(h.dbFile), false);
  });

  test("no pass while there can be nothing to do: no state DB and no rollout old enough", async () => {
    await using h = tempHome();
    const s = defaultMemorySettings();
    const env = { RELAY_MEMORIES_DB: "" };
    assert.equal(mayHaveWork(h.home, s, env, Date.now()), false, "empty home");
    writeRollout(h.home, { mtimeMs: Date.now() - HOUR });
    assert.equal(mayHaveWork(h.home, s, env, Date.now()), false, "only a rollout younger than min_rollout_idle_hours");
    assert.equal(
      mayHaveWork(h.home, s, { RELAY_MEMORIES_DB: "postgres://db.invalid/relay" }, Date.now()),
      true,
      "another DB may hold work",
    );
    writeFileSync(h.dbFile, "");
    assert.equal(mayHaveWork(h.home, s, env, Date.now()), true, "a state DB may hold work");
    rmSync(h.dbFile);
    writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR });
    assert.equal(mayHaveWork(h.home, s, env, Date.now()), true, "an idle rollout");
  });

  test("retention: the pass prunes stale unused stage-1 rows, and phase 2 drops their summary files", async () => {
    await using h = tempHome();
    const now = Math.floor(Date.now() / 1000);
    const state = await openDb(h.dbFile);
    try {
      const thread = (id: string, ageDays: number) => ({
        id,
        origin: "relay",
        rollout_path: `/gone/${id}.jsonl`,
        source: "cli",
        cwd: "/work/proj",
        git_branch: null,
        created_at_ms: (now - ageDays * 86_400) * 1000,
        updated_at_ms: (now - ageDays * 86_400) * 1000,
        memory_mode: "enabled",
        host: "elsewhere",
      });
      ok(await upsertThreads(state, [thread("stale-1", 40), thread("recent-1", 5)]));
      const output = (id: string, ageDays: number) => ({
        thread_id: id,
        source_updated_at: now - ageDays * 86_400,
        raw_memory: `- fact of ${id}`,
        rollout_summary: `# ${id}`,
        rollout_slug: id,
        generated_at: now - ageDays * 86_400,
        usage_count: null,
        last_usage: null,
        selected_for_phase2: 0,
        selected_for_phase2_source_updated_at: null,
      });
      await state.db
        .insertInto("stage1_outputs")
        .values([output("stale-1", 40), output("recent-1", 5)])
        .execute();
    } finally {
      await state.close();
    }
    const stale = path.join(h.memories, "rollout_summaries", "2026-01-01T00-00-00-stal-stale-1.md");
    mkdirSync(path.dirname(stale), { recursive: true });
    writeFileSync(stale, "# stale-1\n");
    const run = await relay(h.home, [...scripted(h), "say hi"], ENV);
    assert.equal(run.code, 0, run.stderr);
    const [end] = await passesEnded(h, 1);
    assert.match(end!, /done: .*phase2 consolidated 1 memory, .*pruned=1/);
    const after = await openDb(h.dbFile);
    try {
      assert.deepEqual(
        ok(await listOutputs(after)).map((o) => o.thread_id),
        ["recent-1"],
        "older than max_unused_days (30) and not selected: pruned",
      );
    } finally {
      await after.close();
    }
    assert.equal(existsSync(stale), false);
  });

  test("the pass asks the session's model, outlives the session, and shares its leases with cron", async () => {
    await using h = tempHome();
    await using server = await startFakeModelServer();
    writeFileSync(path.join(h.home, "config.toml"), '[memories]\nconsolidator = "heuristic"\n');
    const old = writeRollout(h.home, { mtimeMs: Date.now() - 7 * HOUR, user: ["pin the toolchain version"] });
    const stage1 = STAGE1_SYSTEM.split("\n")[0]!;
    const release = deferred<Reply>();
    server.route((r) => r.rawBody.includes(stage1), later(release.promise));
    server.enqueue(reply().text("all done"));
    const ws = path.join(h.home, "ws");
    mkdirSync(ws);
    const run = await relay(
      h.home,
      [
        "run",
        "--base-url",
        server.baseUrl,
        "-m",
        "test-model",
        "--approval",
        "never",
        "--sandbox",
        "danger-full-access",
        "-C",
        ws,
        "say hi",
      ],
      ENV,
    );
    // relay run is done while its pass waits on the model: the pass holds neither its stdio nor its exit.
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stdout + run.stderr, MEMORY_TEXT);
    await server.whenHolding();
    const asked = server.requests.find((r) => r.rawBody.includes(stage1))!;
    assert.equal(asked.body.model, "test-model", "no extract_model: the session's model");
    assert.equal(asked.path, "/v1/responses", "the session's provider and base URL");

    const state = await openDb(h.dbFile);
    try {
      assert.equal(
        ok(await readStage1Job(state, old.id))?.status,
        "running",
        "the pass holds the claim after the session exited",
      );
      // A cron run meanwhile leaves the claimed rollout to the live pass.
      const cron = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--json"], ENV);
      const rep = JSON.parse(cron.stdout);
      assert.equal(rep.phase1.claimed, 0, cron.stderr);
      assert.deepEqual(
        rep.phase1.held.map((x: { thread_id: string }) => x.thread_id),
        [old.id],
      );

      release.resolve(
        reply().text(
          JSON.stringify({
            rollout_summary: "# pinned the toolchain\n- bun 1.4.5",
            rollout_slug: "pin-toolchain",
            raw_memory: "---\ndescription: toolchain\nkeywords: bun\n---\n- pin bun",
          }),
        ),
      );
      const [end] = await passesEnded(h, 1);
      assert.match(end!, /done: phase1 scanned=\d+ claimed=1 ok=1 /);
      const out = ok(await listOutputs(state));
      assert.deepEqual(
        out.map((o) => o.thread_id),
        [old.id],
      );
      assert.match(out[0]!.rollout_summary, /pinned the toolchain/);
    } finally {
      await state.close();
    }
  });
});
