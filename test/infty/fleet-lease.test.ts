/**
 * The fleet's lease in Postgres (src/infty/fleet/lease-pg.ts): one driver per run across hosts,
 * fencing by epoch, takeover of a holder that is gone, and the DB's clock for heartbeat ages.
 * Runs against RELAY_TEST_POSTGRES_URL (scripts/ci/postgres.sh starts one); skipped, saying so,
 * without it.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { type FleetDb, openFleetDb } from "../../src/infty/fleet/db.ts";
import { PgLease } from "../../src/infty/fleet/lease-pg.ts";
import { skipBecause } from "../support/skip.ts";

const PG = process.env.RELAY_TEST_POSTGRES_URL;
const skip = skipBecause(
  "the fleet lease on Postgres",
  PG ? false : "RELAY_TEST_POSTGRES_URL is not set (start one with scripts/ci/postgres.sh)",
);

/** A pid no process has: above the kernel's pid_max (4194304 at most). */
const DEAD_PID = 4_194_305;

describe("the fleet lease in Postgres", { skip }, () => {
  let fleet: FleetDb;
  const runId = () => `fleet-lease-${randomUUID()}`;
  const set = (id: string, values: Record<string, unknown>) =>
    fleet.db.updateTable("infty_leases").set(values).where("run_id", "=", id).execute();

  before(async () => {
    const opened = await openFleetDb(PG!);
    assert.ok("ok" in opened, JSON.stringify(opened));
    fleet = opened.ok;
  });
  after(() => fleet?.close());

  test("opening twice at once migrates once; a bad URL is refused with the URL's password hidden", async () => {
    const [a, b] = await Promise.all([openFleetDb(PG!), openFleetDb(PG!)]);
    assert.ok("ok" in a && "ok" in b);
    await Promise.all([a.ok.close(), b.ok.close()]);
    const bad = await openFleetDb("postgres://relay:s3cret@127.0.0.1:1/nothing");
    assert.ok("error" in bad);
    assert.equal(bad.error.code, "db_open");
    assert.match(
      bad.error.message,
      /cannot connect to the infty fleet DB postgres:\/\/relay:\*\*\*@127\.0\.0\.1:1\/nothing/,
    );
    assert.doesNotMatch(bad.error.message, /s3cret/);
  });

  test("a free run is granted at epoch 1; while held, a second driver is refused with who holds it", async () => {
    const id = runId();
    const lease = new PgLease(fleet, id);
    assert.equal(await lease.view(), undefined);
    const grant = await lease.acquire();
    assert.ok("ok" in grant);
    assert.equal(grant.ok.epoch, 1);
    assert.equal(grant.ok.tookOver, undefined);
    const v = await lease.view();
    assert.equal(v?.state, "held");
    const second = await new PgLease(fleet, id).acquire(`relay infty resume ${id}`);
    assert.ok("error" in second);
    assert.equal(second.error.code, "run_live");
    assert.match(
      second.error.message,
      new RegExp(`run ${id} is driven by pid ${process.pid} .*then: relay infty resume ${id}`),
    );
    assert.ok("ok" in (await grant.ok.check()), "still this grant's lease");
    assert.ok("ok" in (await grant.ok.beat()), "still this grant's lease");
  });

  test("ten drivers asking at once, for a new run and for a released one: exactly one is granted", async () => {
    const id = runId();
    const fresh = await Promise.all(Array.from({ length: 10 }, () => new PgLease(fleet, id).acquire()));
    const first = fresh.find((g) => "ok" in g);
    assert.equal(fresh.filter((g) => "ok" in g).length, 1);
    if (first && "ok" in first) await first.ok.release();
    const grants = await Promise.all(Array.from({ length: 10 }, () => new PgLease(fleet, id).acquire()));
    assert.equal(grants.filter((g) => "ok" in g).length, 1);
    assert.deepEqual(
      grants.filter((g) => "error" in g).map((g) => ("error" in g ? g.error.code : "")),
      Array(9).fill("run_live"),
    );
  });

  test("released, the next grant is epoch 2 with no takeover; the released grant can no longer write", async () => {
    const id = runId();
    const first = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in first);
    await first.ok.release();
    assert.deepEqual(await new PgLease(fleet, id).view(), { state: "free" });
    const second = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in second);
    assert.equal(second.ok.epoch, 2);
    assert.equal(second.ok.tookOver, undefined);
    const fenced = await first.ok.check();
    assert.ok("error" in fenced);
    assert.equal(fenced.error.code, "lease_lost");
    assert.match(fenced.error.message, /holds it now \(epoch 2\); it stops without writing anything more/);
  });

  test("a holder on this host whose pid is gone is taken over at once, and the old grant is fenced out", async () => {
    const id = runId();
    const old = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in old);
    await set(id, { holder_pid: DEAD_PID });
    const v = await new PgLease(fleet, id).view();
    assert.equal(v?.state, "stale");
    const taken = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in taken);
    assert.equal(taken.ok.epoch, 2);
    assert.match(
      taken.ok.tookOver ?? "",
      new RegExp(`took the run over from pid ${DEAD_PID} \\(driver pid ${DEAD_PID} gone\\)`),
    );
    for (const r of [await old.ok.check(), await old.ok.beat()]) {
      assert.ok("error" in r);
      assert.equal(r.error.code, "lease_lost");
    }
    await old.ok.release();
    assert.equal((await new PgLease(fleet, id).view())?.state, "held", "the old grant's release leaves the new one");
  });

  test("a holder on another host is live while it beats, and stale once its heartbeat is older than the timeout by the DB's clock", async () => {
    const id = runId();
    const other = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in other);
    await set(id, { holder_host: "worker-elsewhere", holder_pid: DEAD_PID });
    // Another host's pid says nothing here: only the heartbeat counts.
    const refused = await new PgLease(fleet, id).acquire();
    assert.ok("error" in refused);
    assert.match(refused.error.message, new RegExp(`driven by pid ${DEAD_PID} on host worker-elsewhere`));
    await set(id, { heartbeat_at: sql`clock_timestamp() - interval '10 minutes'` });
    const taken = await new PgLease(fleet, id).acquire();
    assert.ok("ok" in taken);
    assert.match(
      taken.ok.tookOver ?? "",
      /took the run over from pid \d+ on host worker-elsewhere \(no heartbeat since /,
    );
  });

  test("a paused driver that comes back after a takeover finds its lease lost at its next heartbeat", async () => {
    const id = runId();
    const paused = await new PgLease(fleet, id, 60_000).acquire();
    assert.ok("ok" in paused);
    await set(id, { holder_host: "paused-host", heartbeat_at: sql`clock_timestamp() - interval '2 minutes'` });
    const taken = await new PgLease(fleet, id, 60_000).acquire();
    assert.ok("ok" in taken);
    const beat = await paused.ok.beat();
    assert.ok("error" in beat);
    assert.equal(beat.error.code, "lease_lost");
    assert.ok("ok" in (await taken.ok.check()), "still this grant's lease");
  });
});
