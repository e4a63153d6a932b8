/**
 * The infty fleet: the queue in Postgres (src/infty/fleet/queue.ts) and workers as separate
 * processes sharing one runs root (relay infty submit / worker / list / workers). Runs against
 * RELAY_TEST_POSTGRES_URL (scripts/ci/postgres.sh starts one); skipped, saying so, without it.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, afterEach, before, describe, test } from "node:test";
import { sql } from "kysely";
import { inftyCommand } from "../../src/cli/infty/command.ts";
import { runArgsOf } from "../../src/cli/infty/fleet.ts";
import { type FleetDb, openFleetDb } from "../../src/infty/fleet/db.ts";
import {
  type Claim,
  claimRun,
  type FleetRun,
  finishRun,
  listRuns,
  requeueAfterCrash,
  submitRun,
} from "../../src/infty/fleet/queue.ts";
import { FleetViewSchema } from "../../src/infty/fleet/view-format.ts";
import { startServe } from "../../src/infty/serve/server.ts";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { gitIn, makeRepo, userCheckoutFingerprint } from "../support/git-repo.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";
import { deferred, waitFor } from "../support/wait.ts";

const PG = process.env.RELAY_TEST_POSTGRES_URL;

/** A repository whose test fails until wc.mjs splits on any whitespace (examples/infty-repo-demo.json fixes it). */
const WC_FILES = {
  "wc.mjs": 'export function count(text) {\n  return text.split(" ").length;\n}\n',
  "wc.test.mjs":
    'import assert from "node:assert/strict";\nimport { count } from "./wc.mjs";\n\nassert.equal(count("a b  c\\n"), 3);\nassert.equal(count(""), 0);\nconsole.log("wc tests passed");\n',
};
const noPg = PG ? false : "RELAY_TEST_POSTGRES_URL is not set (start one with scripts/ci/postgres.sh)";

describe("relay infty submit keeps run's arguments", () => {
  const submit = inftyCommand().commands.find((c) => c.name() === "submit")!;
  test("without the objective and submit's own options, values and = forms kept whole", () => {
    const argv = ["--db", "postgres://x", "-m", "gpt-5", "build it", "--verifiers=2", "--no-repo", "--priority", "5"];
    assert.deepEqual(runArgsOf(submit, [...argv, "--run-id=r1"], ["--db", "--priority", "--run-id"]), [
      "-m",
      "gpt-5",
      "--verifiers=2",
      "--no-repo",
    ]);
  });
  test("what resume takes of them (models, tools, budgets), for a run taken over", () => {
    const resume = inftyCommand().commands.find((c) => c.name() === "resume")!;
    const resumes = new Set(resume.options.flatMap((o) => [o.long, o.short]));
    const argv = [
      "--verifiers",
      "2",
      "-m",
      "gpt-5",
      "--script",
      "s.json",
      "--no-repo",
      "x",
      "--max-wall=2h",
      "--consensus",
      "majority",
    ];
    assert.deepEqual(
      runArgsOf(submit, argv, [], (f) => resumes.has(f)),
      ["-m", "gpt-5", "--script", "s.json", "--max-wall=2h"],
    );
  });
  test("an objective that looks like a value is not taken for one", () => {
    assert.deepEqual(runArgsOf(submit, ["--sandbox-best-effort", "-s", "read-only", "fix -m"], []), [
      "--sandbox-best-effort",
      "-s",
      "read-only",
    ]);
  });
});

describe("the fleet commands refuse a missing or bad fleet DB", () => {
  test("no DB, not a postgres URL, an unreachable one (password hidden), a bad [infty] db in config.toml", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-fleet-bad-"));
    try {
      const base = { ...process.env, RELAY_HOME: home, RELAY_INFTY_DB: "" };
      const none = await runRelayAsync(["infty", "workers"], base);
      assert.equal(none.status, 2);
      assert.match(none.stderr, /no fleet DB: give --db postgres:\/\/…, set RELAY_INFTY_DB, or set db under \[infty\]/);
      const mysql = await runRelayAsync(["infty", "list", "--db", "mysql://x"], base);
      assert.equal(mysql.status, 2);
      assert.match(mysql.stderr, /--db must be a postgres:\/\/ URL, not "mysql:\/\/x"/);
      const down = await runRelayAsync(
        ["infty", "submit", "--db", "postgres://u:hush@127.0.0.1:1/x", "--no-repo", "objective"],
        base,
      );
      assert.equal(down.status, 1);
      assert.match(down.stderr, /cannot connect to the infty fleet DB postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x/);
      assert.doesNotMatch(down.stderr, /hush/);
      writeFileSync(path.join(home, "config.toml"), '[infty]\ndb = "mysql://x"\n');
      const config = await runRelayAsync(["infty", "workers"], base);
      assert.equal(config.status, 2);
      assert.match(config.stderr, /infty\.db.*postgres:\/\/ or postgresql:\/\/ URL/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("relay infty submit refuses a repository a worker could not start from, before the fleet DB is opened", () => {
  test("a dirty tree, --include-uncommitted, --push or --branch without a repository, -C of a folder outside any", async () => {
    using repo = makeRepo(WC_FILES);
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-fleet-submit-"));
    try {
      const env = { ...process.env, RELAY_HOME: home, RELAY_INFTY_DB: "" };
      // An unreachable DB: every refusal below comes before it would be opened.
      const submit = (args: string[], cwd = repo.dir) =>
        runRelayAsync(["infty", "submit", "--db", "postgres://u@127.0.0.1:1/x", ...args, "x"], env, undefined, cwd);
      writeFileSync(path.join(repo.dir, "wc.mjs"), "changed\n");
      const dirty = await submit([]);
      assert.equal(dirty.status, 2, dirty.stderr);
      assert.match(
        dirty.stderr,
        /has uncommitted changes \(M wc\.mjs\); a worker clones the repository at a commit.*Nothing was queued\./,
      );
      const snapshot = await submit(["--include-uncommitted"]);
      assert.equal(snapshot.status, 2);
      assert.match(snapshot.stderr, /--include-uncommitted is not for submit: .*commit or stash your changes/);
      const pushNone = await submit(["--no-repo", "--push"]);
      assert.equal(pushNone.status, 2);
      assert.match(pushNone.stderr, /--branch and --push need a repository: .* \(instead of --no-repo\)/);
      const outside = await submit(["-C", home]);
      assert.equal(outside.status, 2);
      assert.match(
        outside.stderr,
        /-C .*: not inside a git repository; give a repository's folder or URL, or --no-repo/,
      );
      const branchOutside = await submit(["--branch", "b"], home);
      assert.equal(branchOutside.status, 2);
      assert.match(branchOutside.stderr, /--branch and --push need a repository: submit inside one/);
      // Past the repository checks, the DB is what fails.
      const url = await submit(["-C", "ssh://git@example.invalid/r.git"]);
      assert.equal(url.status, 1);
      assert.match(url.stderr, /cannot connect to the infty fleet DB/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("the fleet's queue in Postgres", { skip: skipBecause("the infty fleet queue", noPg) }, () => {
  let fleet: FleetDb;
  /** Each test's runs carry its own prefix; claims only see runs of the test's priority band. */
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `q-${randomUUID().slice(0, 8)}-${i}`);
  const submit = (id: string, priority = 0, submitter = "t@h") =>
    submitRun(fleet, {
      id,
      objective: `objective ${id}`,
      args: ["--no-repo", "-m", "m1"],
      resumeArgs: ["-m", "m1"],
      priority,
      submitter,
      cwd: "/",
    });

  async function claim(worker: string, perSubmitter?: number): Promise<Claim | undefined> {
    const r = await claimRun(fleet, worker, { staleMs: 60_000, ...(perSubmitter ? { perSubmitter } : {}) });
    assert.ok("ok" in r, JSON.stringify(r));
    return r.ok ?? undefined;
  }
  async function row(id: string): Promise<FleetRun | undefined> {
    const r = await listRuns(fleet);
    assert.ok("ok" in r, JSON.stringify(r));
    return r.ok.find((run) => run.id === id);
  }

  before(async () => {
    const opened = await openFleetDb(PG!);
    assert.ok("ok" in opened, JSON.stringify(opened));
    fleet = opened.ok;
    // Runs other test files left queued would be claimed here: park them.
    await sql`update infty_runs set state = 'parked' where state in ('queued', 'running')`.execute(fleet.db);
  });
  after(() => fleet?.close());

  test("claims go by priority, then submission; two workers at once never get the same run; an id is taken once", async () => {
    const [low, high, next] = ids(3);
    await submit(low!, 1);
    await submit(high!, 9);
    await submit(next!, 1);
    const dup = await submit(low!);
    assert.ok("error" in dup);
    assert.equal(dup.error.code, "run_exists");
    const [a, b] = await Promise.all([claim("wa"), claim("wb")]);
    assert.deepEqual([a?.id, b?.id].sort(), [high, low].sort());
    const c = await claim("wc");
    assert.equal(c?.id, next);
    assert.equal(c?.resume, false);
    assert.deepEqual(c?.args, ["--no-repo", "-m", "m1"]);
    assert.deepEqual(c?.resumeArgs, ["-m", "m1"]);
    assert.equal(await claim("wc"), undefined, "nothing left");
    for (const id of [low!, high!, next!]) await finishRun(fleet, id, "complete");
  });

  test("a cap per submitter: at it, a submitter's runs wait while another's are claimed, even by two workers at once", async () => {
    const [a1, a2, a3, b1] = ids(4);
    const alice = `alice-${randomUUID().slice(0, 6)}`;
    const bob = `bob-${randomUUID().slice(0, 6)}`;
    await submit(a1!, 5, alice);
    await submit(a2!, 5, alice);
    await submit(a3!, 5, alice);
    await submit(b1!, 1, bob);
    const first = await claim("wa", 2);
    assert.equal(first?.id, a1, "highest priority, oldest");
    // Claimers count a submitter's runs under its lock: one claim waits while another holds it.
    const release = deferred();
    const locked = deferred();
    const holding = fleet.db.transaction().execute(async (tx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`relay-infty-submitter:${alice}`}))`.execute(tx);
      locked.resolve();
      await release.promise;
    });
    // The claim starts only once the lock is held, or it could take the lock first and never wait.
    await locked.promise;
    const waiting = claim("wb", 2);
    await waitFor(async () => {
      const r = await sql<{
        n: number;
      }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`.execute(fleet.db);
      return (r.rows[0]?.n ?? 0) > 0;
    }, "the claim to wait for the submitter's lock");
    release.resolve();
    await holding;
    const [x, y] = await Promise.all([waiting, claim("wc", 2)]);
    assert.deepEqual([x?.id, y?.id].sort(), [a2, b1].sort(), "alice's second place and bob's run, never alice's third");
    assert.equal(await claim("wd", 2), undefined, "alice is at the cap and bob has nothing queued");
    await finishRun(fleet, a1!, "complete");
    assert.equal((await claim("wd", 2))?.id, a3, "a place freed");
    for (const id of [a2!, a3!, b1!]) await finishRun(fleet, id, "complete");
  });

  test("a running run whose driver never took its lease is taken over after the timeout, then parked after too many", async () => {
    const [id] = ids(1);
    await submit(id!);
    const first = await claim("w1");
    assert.equal(first?.id, id);
    assert.equal(await claim("w2"), undefined, "its driver may still be starting");
    const age = () =>
      sql`update infty_runs set claimed_at = now() - interval '10 minutes' where id = ${id}`.execute(fleet.db);
    for (let n = 1; n <= 3; n++) {
      await age();
      const taken = await claim(`w${n + 1}`);
      assert.equal(taken?.id, id);
      assert.equal(taken?.resume, true, "a run that was started is resumed");
      assert.match(
        taken?.tookOver ?? "",
        new RegExp(`taken over by worker w${n + 1} from worker w${n} \\(no driver, gone\\)`),
      );
    }
    await age();
    assert.equal(await claim("w9"), undefined);
    const found = await row(id!);
    assert.equal(found?.state, "parked");
    assert.match(found?.reason ?? "", /parked after 3 takeovers in a row .*relay infty resume/);
  });

  test("a driver that dies without saying is queued again, and its run parked after three in a row; progress resets the count", async () => {
    const [id] = ids(1);
    await submit(id!);
    for (let n = 1; n <= 3; n++) {
      assert.equal((await claim("w"))?.id, id);
      await requeueAfterCrash(fleet, id!, "w", "was killed by SIGKILL");
      const found = await row(id!);
      assert.equal(found?.state, "queued");
      assert.match(found?.reason ?? "", /its driver on worker w was killed by SIGKILL; queued again/);
    }
    await finishRun(fleet, id!, "queued");
    assert.equal((await row(id!))?.takeovers, 0);
    for (let n = 1; n <= 4; n++) {
      assert.equal((await claim("w"))?.id, id);
      await requeueAfterCrash(fleet, id!, "w", "exited with code 1");
    }
    const found = await row(id!);
    assert.equal(found?.state, "parked");
    assert.match(
      found?.reason ?? "",
      /parked after 3 drivers in a row ended without finishing \(last: exited with code 1\)/,
    );
    // A requeue for a run this worker no longer drives changes nothing.
    await requeueAfterCrash(fleet, id!, "w", "late");
    assert.equal((await row(id!))?.state, "parked");
  });
});

describe("the live view with a fleet DB", { skip: skipBecause("relay infty serve --db", noPg) }, () => {
  test("GET /api/fleet lists the fleet's runs and workers (the DB's password hidden); the page's stop goes through the DB, its resume queues the run again, as relay infty requeue does", async () => {
    const opened = await openFleetDb(PG!);
    assert.ok("ok" in opened);
    const fleet = opened.ok;
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-fleet-serve-"));
    const id = `sv-${randomUUID().slice(0, 8)}`;
    const [cmd, ...pre] = relayArgv();
    const child = spawn(cmd!, [...pre, "infty", "serve", "--db", PG!, "--port", "0", "--allow-actions"], {
      env: { ...process.env, RELAY_HOME: home, RELAY_INFTY_DB: "" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      // Parked at once: no worker of another test may claim it.
      const sub = await submitRun(fleet, {
        id,
        objective: "watched",
        args: [],
        resumeArgs: [],
        priority: -1000,
        submitter: "t@h",
        cwd: "/",
      });
      assert.ok("ok" in sub);
      await finishRun(fleet, id, "parked", "held for the test");
      let err = "";
      await new Promise<void>((resolve, reject) => {
        child.stderr!.setEncoding("utf8").on("data", (d: string) => {
          err += d;
          if (/actions are on/.test(err)) resolve();
        });
        child.once("exit", () => reject(new Error(err)));
      });
      assert.match(err, /the fleet in postgres:\/\/relay:\*\*\*@/);
      const base = /^open (http:\/\/[^/]+)\//m.exec(err)![1]!;
      const token = /Authorization: Bearer (\S+)\)/.exec(err)![1]!;
      const auth = { authorization: `Bearer ${token}` };
      const view = FleetViewSchema.parse(await (await fetch(`${base}/api/fleet`, { headers: auth })).json());
      assert.doesNotMatch(view.location, /:relay@/);
      assert.equal(view.runs.find((r) => r.id === id)?.reason, "held for the test");
      const act = async (action: string) => {
        const r = await fetch(`${base}/api/runs/${id}/actions/${action}`, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json", "x-relay-action": "1" },
          body: "{}",
        });
        return { status: r.status, body: (await r.json()) as { message?: string; error?: { message: string } } };
      };
      const resumed = await act("resume");
      assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
      assert.match(resumed.body.message ?? "", /is queued again; the next free worker resumes it/);
      const stop = await act("stop");
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      assert.match(stop.body.message ?? "", /was queued; it is stopped and no worker will take it/);
      const again = await act("stop");
      assert.equal(again.status, 409);
      assert.match(again.body.error?.message ?? "", /is stopped in the fleet; nothing to stop/);
      const requeue = await runRelayAsync(["infty", "requeue", id, "--db", PG!], { ...process.env, RELAY_HOME: home });
      assert.equal(requeue.status, 0, requeue.stderr);
      const twice = await runRelayAsync(["infty", "requeue", id, "--db", PG!], { ...process.env, RELAY_HOME: home });
      assert.equal(twice.status, 2);
      assert.match(twice.stderr, /is queued in the fleet; only a stopped, failed or parked run is queued again/);
      await finishRun(fleet, id, "parked", "done with it");
    } finally {
      child.kill("SIGINT");
      await new Promise((r) => (child.exitCode === null ? child.once("exit", r) : r(null)));
      await fleet.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("without --db, GET /api/fleet is a 404 that says how to show one", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-serve-nofleet-"));
    const served = await startServe({ root, host: "127.0.0.1", port: 0 });
    assert.ok("ok" in served);
    try {
      const r = await fetch(`${served.ok.url}/api/fleet`);
      assert.equal(r.status, 404);
      assert.match(
        ((await r.json()) as { error: { message: string } }).error.message,
        /relay infty serve --db postgres/,
      );
    } finally {
      await served.ok.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("a fleet of worker processes", {
  skip: skipBecause("the infty fleet's workers", noPg || noSandboxHere()),
}, () => {
  let fleet: FleetDb;
  let root: string;
  const workers: ChildProcess[] = [];
  const env = () => ({
    ...process.env,
    RELAY_HOME: path.join(root, "home"),
    RELAY_SELF_COMMAND: joinCommandLine(relayArgv()),
  });

  /** examples/infty-demo.json with `cat` where it runs `node`: these tests are about who drives a run, and a node start is 0.1-0.15 s of CPU. */
  let demo: string;

  before(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), "relay-fleet-"));
    demo = path.join(root, "demo.json");
    writeFileSync(
      demo,
      readFileSync(path.join(REPO_ROOT, "examples/infty-demo.json"), "utf8").replaceAll("node ", "cat "),
    );
    const opened = await openFleetDb(PG!);
    assert.ok("ok" in opened);
    fleet = opened.ok;
    await sql`update infty_runs set state = 'parked' where state in ('queued', 'running')`.execute(fleet.db);
  });
  // A test that failed half-way must not leave its workers claiming the next test's runs.
  afterEach(() => {
    for (const w of workers.splice(0)) if (w.exitCode === null) w.kill("SIGKILL");
  });
  after(async () => {
    await fleet?.close();
    rmSync(root, { recursive: true, force: true });
  });

  function startWorker(name: string, extra: NodeJS.ProcessEnv = {}): { child: ChildProcess; output: () => string } {
    const [cmd, ...pre] = relayArgv();
    const child = spawn(
      cmd!,
      [
        ...pre,
        "infty",
        "worker",
        "--db",
        PG!,
        "--name",
        name,
        "--max-runs",
        "2",
        "--poll",
        "100",
        "--runs-root",
        path.join(root, "runs"),
      ],
      { cwd: REPO_ROOT, env: { ...env(), ...extra }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let out = "";
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d));
    workers.push(child);
    return { child, output: () => out };
  }

  // Ten runs (the issue's figure) in CI's long step; six in npm test, to stay quick on two cores.
  const RUNS = process.env.RELAY_LONG_TESTS === "1" ? 10 : 6;

  test(`${RUNS} submitted runs over three workers all complete, each driven by exactly one worker; list and workers tell it`, async () => {
    const submits = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        runRelayAsync(["infty", "submit", "--db", PG!, "--no-repo", "--script", demo, `build wc ${i}`], env()),
      ),
    );
    for (const r of submits) assert.equal(r.status, 0, r.stderr);
    const submitted = submits.map((r) => r.stdout.trim());
    const ws = ["fw-a", "fw-b", "fw-c"].map((n) => startWorker(n));
    const all = async () => {
      const listed = await listRuns(fleet);
      return "ok" in listed ? listed.ok : [];
    };
    await waitFor(async () => {
      const runs = await all();
      return submitted.every((id) => runs.find((r) => r.id === id)?.state === "complete");
    }, `the ${RUNS} runs to complete`);
    const runs = (await all()).filter((r) => submitted.includes(r.id));
    // One grant per run: no run ever had a second driver.
    assert.deepEqual(
      runs.map((r) => r.lease?.epoch),
      Array(RUNS).fill(1),
    );
    for (const id of submitted) {
      const drivers = ws.filter((w) => w.output().includes(`${id}: starting`));
      assert.equal(drivers.length, 1, `${id} was started by one worker`);
    }
    const list = await runRelayAsync(["infty", "list", "--db", PG!], env());
    assert.equal(list.status, 0, list.stderr);
    for (const id of submitted) assert.match(list.stdout, new RegExp(`${id} +complete +- +- +build wc`));
    const status = await runRelayAsync(["infty", "status", submitted[0]!, "--json"], {
      ...env(),
      RELAY_INFTY_RUNS_ROOT: path.join(root, "runs"),
    });
    assert.equal(JSON.parse(status.stdout).status, "complete");
    const listed = await runRelayAsync(["infty", "workers", "--db", PG!, "--json"], env());
    const names = (JSON.parse(listed.stdout) as Array<{ name: string; stopped: boolean }>).filter((w) =>
      w.name.startsWith("fw-"),
    );
    assert.deepEqual(
      names.map((w) => [w.name, w.stopped]),
      [
        ["fw-a", false],
        ["fw-b", false],
        ["fw-c", false],
      ],
    );
    for (const w of ws) w.child.kill("SIGTERM");
    await Promise.all(
      ws.map((w) => new Promise((r) => (w.child.exitCode === null ? w.child.once("exit", r) : r(null)))),
    );
    for (const w of ws) assert.match(w.output(), /worker fw-. stopped/);
    // Their drivers hold the fleet's lease, which the checkpoints' packer checks too.
    for (const w of ws) assert.doesNotMatch(w.output(), /could not pack/);
  });

  /** The demo's script, its Solver first waiting in a command until `<gate>/go` exists. */
  function gatedScript(gate: string): string {
    const gated = JSON.parse(readFileSync(demo, "utf8"));
    const cmd = `touch gate-started && while [ ! -e ${gate}/go ]; do sleep 0.05; done`;
    gated.solver.turns.unshift({ tool_calls: [{ name: "exec_command", arguments: { cmd, yield_time_ms: 30000 } }] });
    const file = path.join(gate, "script.json");
    writeFileSync(file, JSON.stringify(gated));
    return file;
  }

  const hasFile = (dir: string, name: string) =>
    existsSync(dir) && (readdirSync(dir, { recursive: true }) as string[]).some((f) => path.basename(f) === name);
  const leaseOf = (id: string) =>
    fleet.db.selectFrom("infty_leases").selectAll().where("run_id", "=", id).executeTakeFirstOrThrow();
  // One row, not the whole list: waitFor asks this many times over.
  const stateOf = async (id: string) =>
    (await fleet.db.selectFrom("infty_runs").select("state").where("id", "=", id).executeTakeFirst())?.state;
  const stopped = (w: { child: ChildProcess }) =>
    new Promise((r) => (w.child.exitCode === null ? w.child.once("exit", r) : r(null)));

  /** Submits a gated run and waits until its Solver waits at the gate (a worker must be running); `open()` lets it on. */
  async function gatedRun(objective: string) {
    const gate = mkdtempSync(path.join(root, "gate-"));
    const sub = await runRelayAsync(
      ["infty", "submit", "--db", PG!, "--no-repo", "--script", gatedScript(gate), objective],
      env(),
    );
    assert.equal(sub.status, 0, sub.stderr);
    const id = sub.stdout.trim();
    const runDir = path.join(root, "runs", id);
    await waitFor(() => hasFile(runDir, "gate-started"), "the gated command to start");
    return { id, runDir, lease: await leaseOf(id), open: () => writeFileSync(path.join(gate, "go"), "") };
  }

  test("a worker killed with its driver (its host gone): after the lease timeout another worker takes the run over and completes it, saying so in the run's events", async () => {
    const timeout = { RELAY_INFTY_LEASE_TIMEOUT_MS: "1500" };
    const a = startWorker("fk-a", timeout);
    const { id, runDir, lease, open } = await gatedRun("gated");
    assert.equal(lease.epoch, 1);
    process.kill(lease.holder_pid, "SIGKILL");
    a.child.kill("SIGKILL");
    open();
    // Another host: its own RELAY_HOME; the run's role sessions are in its store, on the shared root.
    const b = startWorker("fk-b", { ...timeout, RELAY_HOME: path.join(root, "home-b") });
    await waitFor(async () => (await stateOf(id)) === "complete", "the run to complete under fk-b");
    assert.equal((await leaseOf(id)).epoch, 2, "one takeover, no other driver");
    const roles = JSON.parse(readFileSync(path.join(runDir, "run.json"), "utf8")).roles as Array<{
      rollout_path: string;
    }>;
    for (const r of roles)
      assert.ok(r.rollout_path.startsWith(path.join(runDir, "sessions") + path.sep), r.rollout_path);
    assert.match(b.output(), new RegExp(`${id}: resuming \\(taken over by worker fk-b from worker fk-a`));
    const events = readFileSync(path.join(runDir, "events.jsonl"), "utf8");
    const pid = lease.holder_pid;
    // Its pid seen gone, or (while it is an unreaped zombie) its heartbeat too old.
    assert.match(
      events,
      new RegExp(`took the run over from pid ${pid} \\((driver pid ${pid} gone|no heartbeat since [^)]+)\\)`),
    );
    b.child.kill("SIGTERM");
    await stopped(b);
  });

  test("a driver paused past the lease timeout is taken over; continued, it writes nothing more to the run", async () => {
    const w = startWorker("fs-a", { RELAY_INFTY_LEASE_TIMEOUT_MS: "1500" });
    const { id, runDir, lease: first, open } = await gatedRun("paused");
    process.kill(first.holder_pid, "SIGSTOP");
    await waitFor(async () => (await leaseOf(id)).epoch === 2, "another driver to take the paused one's lease");
    open();
    await waitFor(async () => (await stateOf(id)) === "complete", "the run to complete under its new driver");
    const state = readFileSync(path.join(runDir, "run.json"), "utf8");
    process.kill(first.holder_pid, "SIGCONT");
    await waitFor(
      () => !existsSync(`/proc/${first.holder_pid}`) || isZombie(first.holder_pid),
      "the old driver to stop at its next write",
    );
    assert.equal(readFileSync(path.join(runDir, "run.json"), "utf8"), state, "the old driver wrote nothing");
    assert.equal(await stateOf(id), "complete");
    assert.match(w.output(), new RegExp(`${id}: resuming \\(taken over by worker fs-a from worker fs-a`));
    w.child.kill("SIGTERM");
    await stopped(w);
  });

  test("a worker killed alone: its driver stops after its current step and queues the run again, and another worker resumes it", async () => {
    const a = startWorker("fo-a");
    const { id, lease, open } = await gatedRun("orphaned");
    a.child.kill("SIGKILL");
    await waitFor(async () => (await stateOf(id)) === "queued", "the orphaned driver to queue its run again");
    await waitFor(
      () => !existsSync(`/proc/${lease.holder_pid}`) || isZombie(lease.holder_pid),
      "the orphaned driver to exit",
    );
    open();
    const b = startWorker("fo-b");
    await waitFor(async () => (await stateOf(id)) === "complete", "the run to complete under fo-b");
    assert.match(b.output(), new RegExp(`${id}: resuming\\n`), "resumed, and not as a takeover: its driver let go");
    assert.equal((await leaseOf(id)).epoch, 2);
  });
  test("stop and note through the fleet DB: a queued run is stopped at once; a running one's driver hands the note on and stops, the run left stopped and resumable", async () => {
    const queued = await runRelayAsync(
      ["infty", "submit", "--db", PG!, "--no-repo", "--script", demo, "stopped early"],
      env(),
    );
    const early = queued.stdout.trim();
    const stopEarly = await runRelayAsync(["infty", "stop", early, "--db", PG!], env());
    assert.equal(stopEarly.status, 0, stopEarly.stderr);
    assert.match(stopEarly.stdout, /was queued; it is stopped and no worker will take it/);
    assert.equal(await stateOf(early), "stopped");

    const w = startWorker("fn-a");
    const { id, runDir } = await gatedRun("asked");
    // The asking host has no runs root: it goes through the DB alone.
    const elsewhere = { ...env(), RELAY_HOME: path.join(root, "elsewhere") };
    const note = await runRelayAsync(["infty", "note", id, "look at the edge cases", "--db", PG!], elsewhere);
    assert.equal(note.status, 0, note.stderr);
    assert.match(note.stdout, /recorded in the fleet DB; its driver hands it on within seconds/);
    const notes = path.join(runDir, "memory", "operator-notes.jsonl");
    await waitFor(
      () => existsSync(notes) && readFileSync(notes, "utf8").includes("look at the edge cases"),
      "the driver to hand the note on",
    );
    assert.match(readFileSync(notes, "utf8"), /"from":"relay infty note by [^"]+ \(through the fleet DB\)"/);
    const stop = await runRelayAsync(["infty", "stop", id, "--db", PG!], elsewhere);
    assert.equal(stop.status, 0, stop.stderr);
    assert.match(stop.stdout, new RegExp(`asked run ${id} \\(on worker fn-a\\) to stop after its current step`));
    await waitFor(async () => (await stateOf(id)) === "stopped", "the driver to stop the run");
    const runs = await listRuns(fleet);
    assert.ok("ok" in runs);
    assert.match(
      runs.ok.find((r) => r.id === id)?.reason ?? "",
      /stopped by relay infty stop by .*; resume it with relay infty resume/,
    );
    const again = await runRelayAsync(["infty", "stop", id, "--db", PG!], elsewhere);
    assert.equal(again.status, 1);
    assert.match(again.stderr, new RegExp(`run ${id} is stopped in the fleet; nothing to stop`));
    const state = JSON.parse(readFileSync(path.join(runDir, "run.json"), "utf8"));
    assert.equal(state.status, "interrupted");
    assert.equal(await stateOf(early), "stopped", "no worker took the stopped run");
    w.child.kill("SIGTERM");
    await stopped(w);
  });

  test("a runs root gone from under a driver (as an unmounted network filesystem): the run stops with its lease released and nothing half written; no worker starts it afresh; back in place and requeued, it is resumed from its last durable state", async () => {
    const w = startWorker("fu-a");
    const { id, runDir, open } = await gatedRun("unmounted");
    const away = `${runDir}.away`;
    renameSync(runDir, away);
    open();
    await waitFor(() => /its run store could not be written/.test(w.output()), "the driver to find its store gone");
    assert.match(w.output(), new RegExp(`the run stopped and released its lease.*relay infty resume ${id}`));
    await waitFor(async () => (await stateOf(id)) === "parked", "the run to be parked");
    assert.match(
      w.output(),
      new RegExp(
        `${id}: cannot drive it here: run ${id} was created, but its store is not under .* is the shared runs root mounted there`,
      ),
    );
    // A command of the Solver's may have made folders there again (its patch's); never a run.
    assert.equal(existsSync(path.join(runDir, "run.json")), false, "no worker started the run afresh");
    assert.equal(
      existsSync(path.join(runDir, "events.jsonl")),
      false,
      "the driver logged nothing in a folder not its store",
    );
    assert.notEqual((await leaseOf(id)).released_at, null, "its lease was released");
    // Whole files only: run.json parses, and no temp file was left.
    JSON.parse(readFileSync(path.join(away, "run.json"), "utf8"));
    assert.deepEqual(
      readdirSync(away).filter((f) => f.includes(".tmp-")),
      [],
    );
    rmSync(runDir, { recursive: true, force: true });
    renameSync(away, runDir);
    const requeue = await runRelayAsync(["infty", "requeue", id, "--db", PG!], env());
    assert.equal(requeue.status, 0, requeue.stderr);
    // What the Solver wrote while the store was gone is lost (as on an unmounted filesystem); the
    // run goes on from its last durable state, which the scripted model's later turns may not suit.
    await waitFor(
      async () => ["complete", "failed"].includes((await stateOf(id)) ?? ""),
      "the run to be driven to an end once its store is back",
    );
    assert.match(w.output(), new RegExp(`${id}: resuming\\n`));
    const started = readFileSync(path.join(runDir, "events.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"type":"run_started"'));
    assert.equal(started.length, 2);
    assert.match(started[1]!, /"resumed":true/);
    w.child.kill("SIGTERM");
    await stopped(w);
  });

  test("a run claimed by a worker that died before its driver created it is started, not resumed, by the next", async () => {
    const sub = await runRelayAsync(
      ["infty", "submit", "--db", PG!, "--no-repo", "--script", demo, "never started"],
      env(),
    );
    assert.equal(sub.status, 0, sub.stderr);
    const id = sub.stdout.trim();
    const claimed = await claimRun(fleet, "fd-gone", { staleMs: 60_000 });
    assert.equal("ok" in claimed && claimed.ok?.id, id);
    await sql`update infty_runs set claimed_at = now() - interval '10 minutes' where id = ${id}`.execute(fleet.db);
    const w = startWorker("fd-b", { RELAY_INFTY_LEASE_TIMEOUT_MS: "1500" });
    await waitFor(async () => (await stateOf(id)) === "complete", "the run to complete under fd-b");
    assert.match(w.output(), new RegExp(`${id}: starting \\(taken over by worker fd-b from worker fd-gone`));
    w.child.kill("SIGTERM");
    await stopped(w);
  });

  test("runs on repositories: a path's is cloned at its submitted commit and pushed back with --push, then applied from the user's repository; a URL's is cloned; one no worker can clone is parked with the reason", async () => {
    using repo = makeRepo(WC_FILES);
    const submitted = repo.head();
    const bare = path.join(root, "wc-origin.git");
    gitIn(root, "clone", "-q", "--bare", repo.dir, bare);
    // Committed after submission: the run starts from the commit submit saw, not this one.
    const script = ["--script", path.join(REPO_ROOT, "examples/infty-repo-demo.json"), "--fail-on-tool-error"];
    const submit = (args: string[], cwd = REPO_ROOT) =>
      runRelayAsync(["infty", "submit", "--db", PG!, ...script, ...args], env(), undefined, cwd);
    const pushed = await submit(["--push", "fix wc"], repo.dir);
    assert.equal(pushed.status, 0, pushed.stderr);
    assert.match(pushed.stderr, new RegExp(`on ${realpathSync(repo.dir)} at ${submitted.slice(0, 12)}`));
    writeFileSync(path.join(repo.dir, "later.txt"), "later\n");
    gitIn(repo.dir, "add", "-A");
    gitIn(repo.dir, "commit", "-qm", "later");
    const before = userCheckoutFingerprint(repo.dir);
    const byUrl = await submit(["-C", `file://${bare}`, "fix wc from the URL"]);
    assert.equal(byUrl.status, 0, byUrl.stderr);
    const lost = await submit(["-C", `file://${path.join(root, "no-such.git")}`, "nowhere"]);
    assert.equal(lost.status, 0, lost.stderr);
    const [p, u, l] = [pushed, byUrl, lost].map((r) => r.stdout.trim());
    const w = startWorker("fr-a");
    await waitFor(async () => {
      const states = await Promise.all([p!, u!, l!].map(stateOf));
      return states.join() === "complete,complete,parked";
    }, "the two runs to complete and the third to be parked");
    const runs = await listRuns(fleet);
    assert.ok("ok" in runs);
    assert.match(
      runs.ok.find((r) => r.id === l)?.reason ?? "",
      /cannot clone file:\/\/.*no-such\.git on .*: submit with a repository URL every worker can reach/,
    );
    assert.equal(runs.ok.find((r) => r.id === p)?.repo, realpathSync(repo.dir));

    // The path's run: its clone started at the submitted commit, and --push put the verified commit on the user's repository.
    const state = (id: string) =>
      JSON.parse(readFileSync(path.join(root, "runs", id, "run.json"), "utf8")) as {
        repo: { path: string; base_commit: string; branch: string };
        deliverable: { commit: string };
      };
    const ps = state(p!);
    assert.equal(ps.repo.path, path.join(root, "runs", ".fleet-repos", p!));
    assert.equal(ps.repo.base_commit, submitted);
    assert.equal(gitIn(repo.dir, "rev-parse", `relay/${p}`), ps.deliverable.commit);
    assert.match(readFileSync(path.join(root, "runs", p!, "events.jsonl"), "utf8"), /"type":"pushed","ok":true/);
    assert.equal(
      userCheckoutFingerprint(repo.dir),
      before,
      "the push added a branch; the user's checkout is as it was",
    );
    // Applied from inside the user's repository: the fleet clone's branch is fetched and merged there.
    const applied = await runRelayAsync(
      ["infty", "apply", p!],
      { ...env(), RELAY_INFTY_RUNS_ROOT: path.join(root, "runs") },
      undefined,
      repo.dir,
    );
    assert.equal(applied.status, 0, applied.stderr);
    assert.match(
      applied.stdout,
      new RegExp(`merged run ${p}'s commit .* into main in ${realpathSync(repo.dir)}: merge commit`),
    );
    assert.equal(execFileSync("node", ["wc.test.mjs"], { cwd: repo.dir, encoding: "utf8" }), "wc tests passed\n");

    // The URL's run: cloned from the URL's default branch; nothing pushed (no --push).
    const us = state(u!);
    assert.equal(us.repo.base_commit, submitted);
    assert.equal(gitIn(path.join(root, "runs", ".fleet-repos", u!), "remote", "get-url", "origin"), `file://${bare}`);
    assert.throws(() => gitIn(bare, "rev-parse", "--verify", `relay/${u}`), "not pushed without --push");
    w.child.kill("SIGTERM");
    await stopped(w);
  });
});

function isZombie(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? false;
  } catch {
    return true;
  }
}
