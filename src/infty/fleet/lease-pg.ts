/**
 * The fleet's lease: a run's one-driver lease as a row of `infty_leases` in the fleet DB, so
 * workers on many hosts agree on who drives it. A grant, a takeover and a release are each one
 * transaction that locks the row (`FOR UPDATE`); a heartbeat and a fencing check are one
 * statement each, matched on the epoch and the holder, so a worker whose lease was taken over
 * finds out at its next write and stops. Heartbeat ages are measured by the database's clock,
 * since the hosts' clocks may disagree.
 */
import { type RawBuilder, sql, type Transaction } from "kysely";
import { err, errorMessage, ok, type Result } from "../../util/result.ts";
import {
  describeHolder,
  LEASE_STALE_MS,
  type LeaseGrant,
  type LeaseRecord,
  type LeaseView,
  leaseLost,
  liveRefusal,
  type RunLease,
  selfHolder,
  stillOurs,
  viewAt,
} from "../lease.ts";
import type { FleetDb, FleetTables, LeasesTable } from "./db.ts";

/** A lease row with its heartbeat's age by the database's clock. */
type Row = LeasesTable & { age_ms: number };

const AGE_MS = sql<number>`(extract(epoch from (clock_timestamp() - heartbeat_at)) * 1000)::float8`.as("age_ms");

function recordOf(r: LeasesTable): LeaseRecord {
  return {
    version: 1,
    epoch: r.epoch,
    holder: { pid: r.holder_pid, start_time: r.holder_start, host: r.holder_host },
    acquired_at: r.acquired_at.toISOString(),
    heartbeat_at: r.heartbeat_at.toISOString(),
    released_at: r.released_at ? r.released_at.toISOString() : null,
  };
}

export class PgLease implements RunLease {
  constructor(
    private readonly fleet: FleetDb,
    private readonly runId: string,
    /** A holder on another host without a heartbeat for this long is gone. */
    private readonly staleMs = LEASE_STALE_MS,
  ) {}

  private async row(tx?: Transaction<FleetTables>, lock = false): Promise<Row | undefined> {
    const q = (tx ?? this.fleet.db)
      .selectFrom("infty_leases")
      .selectAll()
      .select(AGE_MS)
      .where("run_id", "=", this.runId);
    return (lock ? q.forUpdate() : q).executeTakeFirst();
  }

  async view(): Promise<LeaseView | undefined> {
    const r = await this.row().catch(() => undefined);
    return r ? viewAt(recordOf(r), r.age_ms, this.staleMs) : undefined;
  }

  /** The lease as it is now; an error value when the fleet DB cannot be read. */
  async current(): Promise<Result<LeaseRecord | undefined>> {
    try {
      const r = await this.row();
      return ok(r ? recordOf(r) : undefined);
    } catch (e) {
      return err(
        "lease_unreadable",
        `cannot read run ${this.runId}'s lease in ${this.fleet.location}: ${errorMessage(e)}`,
      );
    }
  }

  async acquire(then = `relay infty resume ${this.runId}`): Promise<Result<LeaseGrant>> {
    try {
      return await this.fleet.db.transaction().execute(async (tx) => {
        // Locks the row, or (for a run never leased) makes one to lock, so two grants take turns.
        await tx
          .insertInto("infty_leases")
          .values({
            run_id: this.runId,
            epoch: 0,
            holder_pid: 1,
            holder_host: "",
            acquired_at: sql`now()`,
            heartbeat_at: sql`now()`,
            released_at: sql`now()`,
          })
          .onConflict((oc) => oc.column("run_id").doNothing())
          .execute();
        const prior = await this.row(tx, true);
        if (!prior) return err("lease_failed", `run ${this.runId}'s lease row vanished while it was taken`);
        const v = viewAt(recordOf(prior), prior.age_ms, this.staleMs);
        if (v.state === "held") return liveRefusal(this.runId, v, then);
        const holder = selfHolder();
        const granted = await tx
          .updateTable("infty_leases")
          .set({
            epoch: prior.epoch + 1,
            holder_pid: holder.pid,
            holder_start: holder.start_time,
            holder_host: holder.host,
            acquired_at: sql`clock_timestamp()`,
            heartbeat_at: sql`clock_timestamp()`,
            released_at: null,
          })
          .where("run_id", "=", this.runId)
          .returningAll()
          .executeTakeFirstOrThrow();
        const tookOver =
          v.state === "stale" ? `took the run over from ${describeHolder(v.record.holder)} (${v.why})` : undefined;
        return ok(new PgGrant(this.fleet, this.runId, recordOf(granted), tookOver));
      });
    } catch (e) {
      return err("lease_failed", `cannot take run ${this.runId}'s lease in ${this.fleet.location}: ${errorMessage(e)}`);
    }
  }
}

class PgGrant implements LeaseGrant {
  constructor(
    private readonly fleet: FleetDb,
    private readonly runId: string,
    private readonly record: LeaseRecord,
    readonly tookOver?: string,
  ) {}

  get epoch(): number {
    return this.record.epoch;
  }

  async check(): Promise<Result<void>> {
    const current = await new PgLease(this.fleet, this.runId).current();
    if ("error" in current) return current;
    return stillOurs(this.record, current.ok) ? ok(undefined) : leaseLost(current.ok);
  }

  /** An update of this grant's row, only while it is still this grant's (epoch, holder, not released). */
  private updateOurs(set: { heartbeat_at?: RawBuilder<Date>; released_at?: RawBuilder<Date> }) {
    const { holder } = this.record;
    return this.fleet.db
      .updateTable("infty_leases")
      .set(set)
      .where("run_id", "=", this.runId)
      .where("epoch", "=", this.record.epoch)
      .where("holder_pid", "=", holder.pid)
      .where("holder_host", "=", holder.host)
      .where("released_at", "is", null);
  }

  async beat(): Promise<Result<void>> {
    try {
      const beaten = await this.updateOurs({ heartbeat_at: sql`clock_timestamp()` }).executeTakeFirst();
      if (Number(beaten.numUpdatedRows) === 1) return ok(undefined);
    } catch (e) {
      return err(
        "lease_unreadable",
        `cannot renew run ${this.runId}'s lease in ${this.fleet.location}: ${errorMessage(e)}`,
      );
    }
    const current = await new PgLease(this.fleet, this.runId).current();
    return "error" in current ? current : leaseLost(current.ok);
  }

  async release(): Promise<void> {
    await this.updateOurs({ released_at: sql`clock_timestamp()` })
      .execute()
      .catch(() => undefined);
  }
}
