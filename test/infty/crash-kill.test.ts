/**
 * SIGKILL `relay infty run` at 50 points, then `relay infty resume` each run once, unkilled:
 * every run must end complete with a verified deliverable identical to an uninterrupted run's.
 * The models are scripted (examples/infty-demo.json); relay, its executors and the sandboxed
 * commands are real processes. Half the kills come after the Nth `--json` event line, N spread
 * over a whole run; half after a random delay within the measured length of a whole run, drawn
 * from a seeded PRNG (the seed is printed; RELAY_CRASH_SEED=<seed> replays a sequence).
 *
 * The 50 kills are a long suite: `npm test` skips them (saying so); CI runs them as their own
 * step with RELAY_LONG_TESTS=1 (see docs/infty.md). The crash windows they found are also
 * pinned by the quick tests at the end, which always run.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { listCheckpoints, readCheckpoint } from "../../src/infty/checkpoints.ts";
import { checkDeliverable } from "../../src/infty/deliverable.ts";
import { objectiveMessage } from "../../src/infty/prompts.ts";
import { NoteSchema, RUN_DIRS, RunMetaSchema } from "../../src/infty/run-format.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { prng } from "../support/prng.ts";
import { relayArgv } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";

const SCRIPT = path.join(REPO_ROOT, "examples/infty-demo.json");
const OBJECTIVE =
  "Build a small word-count CLI (words by default, --lines for lines) with tests, verified, as a deliverable.";
const RUN_ID = "crash";
const KILLS_BY_EVENT = 25;
const KILLS_BY_TIME = 25;
/** Runs killed and resumed at the same time: the kills land under load, as in real life. */
const PARALLEL = 3;
const DELIVERABLE_FILES = ["README.md", "wc.mjs", "wc.test.mjs"];

const longSkip =
  process.env.RELAY_LONG_TESTS === "1"
    ? noSandboxHere()
    : "a long suite (2-3 minutes on 2 cores), run by .ci/run as its own step; set RELAY_LONG_TESTS=1 to run it here";

type Trigger = { kind: "event"; line: number } | { kind: "time"; ms: number };

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  lines: number;
  ms: number;
}

/** Runs relay in `home`; with a trigger, SIGKILLs it at that point (if it is still running then). */
function relay(home: string, args: string[], trigger?: Trigger): Promise<Exit> {
  const [cmd, ...pre] = relayArgv();
  const t0 = Date.now();
  const child = spawn(cmd!, [...pre, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, RELAY_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL");
  };
  let stdout = "";
  let stderr = "";
  let lines = 0;
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
    lines += d.split("\n").length - 1;
    if (trigger?.kind === "event" && lines >= trigger.line) kill();
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  // The random delay IS the test input (where the kill lands), not a wait for anything.
  const timer = trigger?.kind === "time" ? setTimeout(kill, trigger.ms) : undefined;
  return new Promise((resolve) =>
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, lines, ms: Date.now() - t0 });
    }),
  );
}

const runArgs = ["infty", "run", "--no-repo", "--run-id", RUN_ID, "--json", "--script", SCRIPT, OBJECTIVE];
const resumeArgs = ["infty", "resume", RUN_ID, "--json", "--script", SCRIPT];

function files(dir: string): Record<string, string> {
  return Object.fromEntries(DELIVERABLE_FILES.map((f) => [f, readFileSync(path.join(dir, f), "utf8")]));
}

/** Checks a finished run's store; returns its deliverable's files. */
async function checkComplete(home: string, what: string): Promise<Record<string, string>> {
  const dir = path.join(home, "infty", RUN_ID);
  const meta = RunMetaSchema.parse(JSON.parse(readFileSync(path.join(dir, "run.json"), "utf8")));
  assert.equal(meta.status, "complete", `${what}: status ${meta.status} (${meta.status_detail})`);
  assert.ok(meta.deliverable && meta.verified_at, `${what}: no verified deliverable`);
  assert.equal(meta.pending, null, what);
  assert.equal(meta.inflight, null, what);
  const check = await checkDeliverable(meta.deliverable.path);
  assert.ok("ok" in check, `${what}: ${JSON.stringify(check)}`);
  // A replayed transition must not add a note twice.
  const notes = readFileSync(path.join(dir, "memory/notes.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => NoteSchema.parse(JSON.parse(l)));
  assert.equal(new Set(notes.map((n) => n.id)).size, notes.length, `${what}: duplicate note ids`);
  assert.deepEqual(
    notes.map((n) => n.kind),
    ["directive", "verdict", "verdict", "final_delivery"],
    `${what}: notes`,
  );
  await checkCheckpoints(dir, meta.handoffs, what);
  return files(meta.deliverable.path);
}

/** Every checkpoint is readable (no object torn by a kill), and every step before the last has one. */
async function checkCheckpoints(dir: string, handoffs: number, what: string): Promise<void> {
  const list = await listCheckpoints(dir);
  assert.ok("ok" in list, `${what}: ${JSON.stringify(list)}`);
  for (const c of list.ok) assert.ok("ok" in (await readCheckpoint(dir, c)), `${what}: ${c.id} cannot be read`);
  const steps = new Set(list.ok.map((c) => c.handoff));
  // The last step is the accepted delivery: a kill before its checkpoint leaves a complete run, which resume does not drive again.
  for (let h = 1; h < handoffs; h++)
    assert.ok(steps.has(h), `${what}: no checkpoint of step ${h} (have ${[...steps].join(", ")})`);
}

interface Outcome {
  trigger: Trigger;
  /** Where the kill landed: before the run existed, while it ran, or after it had finished. */
  landed: "before_create" | "mid_run" | "after_finish";
}

async function killAndResume(trigger: Trigger, reference: Record<string, string>): Promise<Outcome> {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-crash-"));
  const what = `kill ${trigger.kind === "event" ? `after event line ${trigger.line}` : `after ${trigger.ms} ms`}`;
  try {
    const killed = await relay(home, runArgs, trigger);
    if (killed.signal !== "SIGKILL") assert.equal(killed.code, 0, `${what}: the unkilled run failed: ${killed.stderr}`);
    const resumed = await relay(home, resumeArgs);
    let landed: Outcome["landed"] = killed.signal === "SIGKILL" ? "mid_run" : "after_finish";
    if (resumed.code === 2) {
      // Killed before the run store existed: the message says so and how to start over.
      assert.match(resumed.stderr, /run crash was never created|no run crash under/, `${what}: ${resumed.stderr}`);
      assert.match(
        resumed.stderr,
        /relay infty run --run-id crash /,
        `${what}: no command to start over: ${resumed.stderr}`,
      );
      const again = await relay(home, runArgs);
      assert.equal(again.code, 0, `${what}: starting over failed: ${again.stderr}`);
      landed = "before_create";
    } else {
      assert.equal(resumed.code, 0, `${what}: resume exited ${resumed.code}: ${resumed.stderr.slice(-2000)}`);
      const finished = JSON.parse(resumed.stdout.trim().split("\n").at(-1)!) as { type: string; status: string };
      assert.deepEqual([finished.type, finished.status], ["run_finished", "complete"], what);
    }
    assert.deepEqual(
      await checkComplete(home, what),
      reference,
      `${what}: the deliverable differs from an uninterrupted run's`,
    );
    return { trigger, landed };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

describe("relay infty: SIGKILL at any point, then one resume", {
  skip: skipBecause("the infty crash-kill suite", longSkip),
}, () => {
  test(`${KILLS_BY_EVENT + KILLS_BY_TIME} kills, each resumed to a complete run with a verified deliverable`, {
    timeout: 15 * 60_000,
  }, async () => {
    const t0 = Date.now();
    const refHome = mkdtempSync(path.join(os.tmpdir(), "relay-crash-ref-"));
    let reference: Record<string, string>;
    let full: Exit;
    try {
      full = await relay(refHome, runArgs);
      assert.equal(full.code, 0, full.stderr);
      reference = await checkComplete(refHome, "the uninterrupted run");
    } finally {
      rmSync(refHome, { recursive: true, force: true });
    }
    const seed = Number(process.env.RELAY_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 32));
    process.stderr.write(
      `crash-kill: a whole run takes ${full.ms} ms and prints ${full.lines} event lines; seed ${seed} (replay: RELAY_CRASH_SEED=${seed})\n`,
    );
    const random = prng(seed);
    const triggers: Trigger[] = [
      ...Array.from(
        { length: KILLS_BY_EVENT },
        (_, i): Trigger => ({ kind: "event", line: 1 + Math.round((i * (full.lines - 1)) / (KILLS_BY_EVENT - 1)) }),
      ),
      // Under load (PARALLEL runs at once) a run takes longer than alone, so the delays still fall inside it.
      ...Array.from({ length: KILLS_BY_TIME }, (): Trigger => ({ kind: "time", ms: Math.round(random() * full.ms) })),
    ];
    const outcomes = await pool(triggers, PARALLEL, (t) => killAndResume(t, reference));
    const count = (l: Outcome["landed"]) => outcomes.filter((o) => o.landed === l).length;
    process.stderr.write(
      `crash-kill: ${outcomes.length} kills resumed to complete runs (${count("mid_run")} mid-run, ${count("before_create")} before the run existed, ${count("after_finish")} after it finished) in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    assert.equal(outcomes.length, triggers.length);
    assert.ok(count("mid_run") >= KILLS_BY_EVENT - 1, "most kills landed while the run was running");
  });
});

/** The same run id in a fresh RELAY_HOME; removed afterwards. */
function tempHome(): { home: string; runDir: string } & Disposable {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-crash-"));
  return {
    home,
    runDir: path.join(home, "infty", RUN_ID),
    [Symbol.dispose]: () => rmSync(home, { recursive: true, force: true }),
  };
}

const init = {
  run_id: RUN_ID,
  objective: OBJECTIVE,
  verifiers: 1,
  consensus: "all" as const,
  max_turns: 50,
  max_wall_ms: 3_600_000,
};

describe("relay infty: the crash windows, one by one", {
  skip: skipBecause("the infty crash windows", noSandboxHere()),
}, () => {
  test("killed after run.json was written but before the run was in place: resume finishes creating it and runs it", async () => {
    using t = tempHome();
    const created = await RunStore.create(t.home, init, {
      type: "solver_message",
      message: objectiveMessage(OBJECTIVE),
    });
    assert.ok("ok" in created);
    // What a kill inside RunStore.create leaves: the staging folder with run.json only.
    const staging = path.join(t.home, "infty", `.creating-${RUN_ID}`);
    renameSync(t.runDir, staging);
    for (const d of RUN_DIRS) rmSync(path.join(staging, d), { recursive: true });
    const listed = await relay(t.home, ["infty", "list"]);
    assert.match(listed.stderr, /run crash is half created .*relay infty resume crash/);
    const status = await relay(t.home, ["infty", "status", RUN_ID]);
    assert.equal(status.code, 2, "status only reads: it does not finish the creation");
    const resumed = await relay(t.home, resumeArgs);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.ok(!existsSync(staging));
    assert.ok(Object.keys(await checkComplete(t.home, "finished creation")).length > 0);
  });

  test("killed before run.json existed: resume says nothing ran and gives the command to start over (exit 2)", async () => {
    using t = tempHome();
    mkdirSync(path.join(t.home, "infty", `.creating-${RUN_ID}`), { recursive: true });
    const r = await relay(t.home, resumeArgs);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /run crash was never created: relay stopped before it saved the run's state, so nothing of it ran.*Start over with: relay infty run --run-id crash "<objective>"/,
    );
    assert.ok(!existsSync(path.join(t.home, "infty", `.creating-${RUN_ID}`)), "the empty leftover is removed");
    const none = await relay(t.home, resumeArgs);
    assert.equal(none.code, 2);
    assert.match(
      none.stderr,
      /no run crash under .*start it with relay infty run --run-id crash "<objective>".*relay infty list/,
    );
  });

  test("killed between accepting the deliverable and marking the run complete: resume completes it without running a role", async () => {
    using t = tempHome();
    const first = await relay(t.home, runArgs);
    assert.equal(first.code, 0, first.stderr);
    const file = path.join(t.runDir, "run.json");
    const meta = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...meta, status: "running", status_detail: "" }));
    const resumed = await relay(t.home, resumeArgs);
    assert.equal(resumed.code, 0, resumed.stderr);
    const events = resumed.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; detail?: string });
    assert.deepEqual(
      events.map((e) => e.type),
      ["run_started", "run_finished"],
      "no role was asked anything",
    );
    assert.match(events[1]!.detail!, /marked complete on resume/);
    await checkComplete(t.home, "completed on resume");
    const again = await relay(t.home, resumeArgs);
    assert.equal(again.code, 0, "resuming a complete run checks it again and succeeds");
    assert.match(again.stdout, /already complete; its deliverable passed the check again/);
  });

  test("a note replayed after a crash is not added twice; a torn log line is ended before the next one", async () => {
    using t = tempHome();
    const created = await RunStore.create(t.home, init);
    assert.ok("ok" in created);
    const a = await created.ok.note("director", "directive", "use words");
    // A kill between the note's append and run.json's save: the counter on disk is behind.
    const file = path.join(t.runDir, "run.json");
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), next_note: 1 }));
    const reloaded = await RunStore.load(t.home, RUN_ID);
    assert.ok("ok" in reloaded);
    const replayed = await reloaded.ok.note("director", "directive", "use words");
    assert.equal(replayed.id, a.id);
    const next = await reloaded.ok.note("verifier-1", "verdict", "pass");
    assert.equal(next.id, "note-0002");
    assert.deepEqual(
      (await reloaded.ok.notes()).map((n) => n.id),
      ["note-0001", "note-0002"],
    );
    writeFileSync(path.join(t.runDir, "events.jsonl"), '{"type":"torn');
    await reloaded.ok.log({ type: "warning", message: "after" });
    const lines = readFileSync(path.join(t.runDir, "events.jsonl"), "utf8").split("\n");
    assert.equal(lines[0], '{"type":"torn');
    assert.equal((JSON.parse(lines[1]!) as { message: string }).message, "after");
  });
});
