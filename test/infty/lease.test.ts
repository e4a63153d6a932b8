/**
 * One driver per run: the local lease (lease-file.ts). A live holder is refused with who it is;
 * a holder that is gone (dead pid on this host, a pid reused by another process, no heartbeat
 * from another host) is taken over, saying so; a grant whose lease was taken over fails its
 * next check and heartbeat (fencing) and cannot release the new holder's lease.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { LEASE_STALE_MS, type LeaseRecord, selfHolder } from "../../src/infty/lease.ts";
import { FileLease, LEASE_FILE } from "../../src/infty/lease-file.ts";
import { runInfty } from "../../src/infty/orchestrator.ts";
import { later, type Reply } from "../support/fake-model-server.ts";
import { setup, sig } from "../support/infty-timeline.ts";
import { until } from "../support/wait.ts";

function runDir(): { dir: string } & Disposable {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-lease-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

const read = (dir: string) => JSON.parse(readFileSync(path.join(dir, LEASE_FILE), "utf8")) as LeaseRecord;
const write = (dir: string, r: LeaseRecord) => writeFileSync(path.join(dir, LEASE_FILE), JSON.stringify(r));

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "0"]);
  return r.pid!;
}

const record = (over: Partial<LeaseRecord>): LeaseRecord => {
  const now = new Date().toISOString();
  return {
    version: 1,
    epoch: 3,
    holder: selfHolder(),
    acquired_at: now,
    heartbeat_at: now,
    released_at: null,
    ...over,
  };
};

describe("the run lease", () => {
  test("granted on a run without one (epoch 1); a second acquire while it is held is refused naming the holder; release frees it, the next grant counts on", async () => {
    using d = runDir();
    const lease = new FileLease(d.dir, "r");
    const g = await lease.acquire();
    assert.ok("ok" in g);
    assert.equal(g.ok.epoch, 1);
    assert.equal(g.ok.tookOver, undefined);
    assert.deepEqual(read(d.dir).holder, selfHolder());
    const again = await lease.acquire("relay infty restore r ckpt-0001");
    assert.ok("error" in again);
    assert.equal(again.error.code, "run_live");
    assert.match(
      again.error.message,
      new RegExp(
        `run r is driven by pid ${process.pid} \\(since .*last heartbeat \\d+ s ago\\).*relay infty logs r --follow.*relay infty stop r.*then: relay infty restore r ckpt-0001$`,
      ),
    );
    assert.deepEqual(await lease.view().then((v) => v?.state), "held");
    await g.ok.release();
    assert.ok(read(d.dir).released_at);
    assert.deepEqual(await lease.view(), { state: "free" });
    const next = await lease.acquire();
    assert.ok("ok" in next && next.ok.epoch === 2 && next.ok.tookOver === undefined);
  });

  test("a holder that is gone is taken over, saying why: a dead pid here, a reused pid, no heartbeat from another host", async () => {
    const dead = deadPid();
    const cases: Array<[Partial<LeaseRecord>, RegExp]> = [
      [
        { holder: { ...selfHolder(), pid: dead } },
        new RegExp(`took the run over from pid ${dead} \\(driver pid ${dead} gone\\)`),
      ],
      [
        { holder: { ...selfHolder(), start_time: "1" } },
        new RegExp(`driver pid ${process.pid} gone \\(the pid now belongs to another process\\)`),
      ],
      [
        {
          holder: { pid: 7, start_time: null, host: "elsewhere.example" },
          heartbeat_at: new Date(Date.now() - LEASE_STALE_MS - 1000).toISOString(),
        },
        /took the run over from pid 7 on host elsewhere\.example \(no heartbeat since /,
      ],
    ];
    for (const [over, why] of cases) {
      using d = runDir();
      write(d.dir, record(over));
      const lease = new FileLease(d.dir, "r");
      assert.equal((await lease.view())?.state, "stale");
      const g = await lease.acquire();
      assert.ok("ok" in g, JSON.stringify(g));
      assert.equal(g.ok.epoch, 4);
      assert.match(g.ok.tookOver ?? "", why);
    }
    // Another host with a fresh heartbeat may well be driving it: refused.
    using d = runDir();
    write(d.dir, record({ holder: { pid: 7, start_time: null, host: "elsewhere.example" } }));
    const refused = await new FileLease(d.dir, "r").acquire();
    assert.ok("error" in refused && /driven by pid 7 on host elsewhere\.example/.test(refused.error.message));
  });

  test("fencing: once another process holds the lease, the old grant's check and heartbeat fail and its release leaves the new lease alone", async () => {
    using d = runDir();
    const lease = new FileLease(d.dir, "r");
    const g = await lease.acquire();
    assert.ok("ok" in g);
    assert.deepEqual(await g.ok.check(), { ok: null });
    assert.deepEqual(await g.ok.beat(), { ok: null });
    const theirs = record({ epoch: 2, holder: { pid: 7, start_time: null, host: "elsewhere.example" } });
    write(d.dir, theirs);
    for (const r of [await g.ok.check(), await g.ok.beat()]) {
      assert.ok("error" in r);
      assert.equal(r.error.code, "lease_lost");
      assert.match(
        r.error.message,
        /no longer drives the run: pid 7 on host elsewhere\.example holds it now \(epoch 2\)/,
      );
    }
    await g.ok.release();
    assert.deepEqual(read(d.dir), theirs);
  });

  test("a lock left by a process that died holding it is broken; a broken lease file is an error with the fix", async () => {
    using d = runDir();
    const lock = path.join(d.dir, "lease.lock");
    writeFileSync(lock, "{}");
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    const g = await new FileLease(d.dir, "r").acquire();
    assert.ok("ok" in g, JSON.stringify(g));
    writeFileSync(path.join(d.dir, LEASE_FILE), "{not json");
    const broken = await new FileLease(d.dir, "r").acquire();
    assert.ok("error" in broken && broken.error.code === "lease_unreadable");
    assert.match(broken.error.message, /lease\.json is not valid JSON.*move it away/);
  });
});

describe("a driver whose run is taken over", () => {
  test("stops at its next write without touching the run: run.json, the checkpoints and the model are left alone", async () => {
    await using t = await setup();
    let answer!: (r: Reply) => void;
    t.server.enqueue(later(new Promise<Reply>((r) => (answer = r))));
    const running = runInfty({
      home: t.home,
      config: t.config,
      objective: "o",
      runId: "fenced",
      verifiers: 1,
      report: (e) => t.events.push(e),
      signal: new AbortController().signal,
    });
    await until(t.server.whenHolding(), "the Solver's first request");
    const dir = path.join(t.home, "infty", "fenced");
    // Another process takes the run over (as a resume after a stale heartbeat would).
    const mine = read(dir);
    write(dir, record({ epoch: mine.epoch + 1, holder: { pid: 7, start_time: null, host: "elsewhere.example" } }));
    const runJson = readFileSync(path.join(dir, "run.json"), "utf8");
    answer(sig({ type: "verification_request", claim_path: "memory/claims/c.json" }));
    const r = await running;
    assert.ok("error" in r, JSON.stringify(r));
    assert.equal(r.error.code, "lease_lost");
    assert.match(
      r.error.message,
      /run fenced: this process no longer drives the run: pid 7 on host elsewhere\.example holds it now/,
    );
    assert.equal(readFileSync(path.join(dir, "run.json"), "utf8"), runJson, "run.json is as the new holder found it");
    assert.equal(read(dir).holder.host, "elsewhere.example", "the new holder's lease stands");
    assert.equal(t.server.requests.length, 1, "no role was asked anything more");
    assert.ok(!t.events.some((e) => e.type === "checkpoint" || e.type === "handoff"));
  });
});

test("a lock whose holder died a moment ago (killed while it held the lock) is broken at once", async () => {
  using d = runDir();
  const lock = path.join(d.dir, "lease.lock");
  writeFileSync(lock, JSON.stringify({ ...selfHolder(), pid: deadPid() }));
  // Dated in the future, the lock never grows old: only its dead holder lets the grant through.
  const future = new Date(Date.now() + 3600_000);
  utimesSync(lock, future, future);
  const g = await new FileLease(d.dir, "r").acquire();
  assert.ok("ok" in g, JSON.stringify(g));
});
