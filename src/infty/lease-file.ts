/**
 * The local lease: `<run>/lease.json`, written atomically (temp file, fsync, rename). Changes
 * of the lease (a grant, a heartbeat, a release) are made one at a time under `lease.lock`, a
 * file created with O_EXCL and removed at once; a lock left by a process that died while it
 * held it (a few milliseconds) is broken after LOCK_STALE_MS. Reads (fencing checks, views)
 * take no lock: the file is always whole.
 */
import { open, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { parseJsonWith } from "../util/json.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import { writeFileAtomic } from "./durable.ts";
import {
  describeHolder,
  type LeaseGrant,
  LeaseHolderSchema,
  type LeaseRecord,
  LeaseRecordSchema,
  type LeaseView,
  leaseLost,
  liveRefusal,
  processGone,
  type RunLease,
  selfHolder,
  stillOurs,
  viewOf,
} from "./lease.ts";

export const LEASE_FILE = "lease.json";
const LOCK_FILE = "lease.lock";
/** A lock held longer than this belongs to a process that died holding it. */
const LOCK_STALE_MS = 10_000;
/** How long a change of the lease waits for the lock before it gives up. */
const LOCK_WAIT_MS = 15_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the lock was left by a process of this host that is gone (killed while it held it). */
async function lockHolderGone(lock: string): Promise<boolean> {
  const holder = LeaseHolderSchema.safeParse(
    await readFile(lock, "utf8")
      .then(JSON.parse, () => undefined)
      .catch(() => undefined),
  );
  return holder.success && processGone(holder.data) !== undefined;
}

export class FileLease implements RunLease {
  constructor(
    private readonly runDir: string,
    private readonly runId: string,
  ) {}

  private get file(): string {
    return path.join(this.runDir, LEASE_FILE);
  }

  /** The lease file's text; undefined when there is none. Throws on other errors. */
  async text(): Promise<string | undefined> {
    try {
      return await readFile(this.file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
  }

  /** The lease as written; undefined when there is none; an error value when it is unreadable. */
  async read(known?: string): Promise<Result<LeaseRecord | undefined>> {
    let text: string | undefined;
    try {
      text = known ?? (await this.text());
    } catch (e) {
      return err("lease_unreadable", `cannot read ${this.file}: ${errorMessage(e)}`);
    }
    if (text === undefined) return ok(undefined);
    return parseJsonWith(LeaseRecordSchema, text, this.file, {
      code: "lease_unreadable",
      invalid: "is not a run lease",
      note: "relay writes it whole; move it away if another tool changed it, and the next resume writes a new one",
    });
  }

  /** Replaces the lease (callers hold the lock); the text written. */
  async write(record: LeaseRecord): Promise<string> {
    const text = JSON.stringify(record, null, 2) + "\n";
    await writeFileAtomic(this.file, text);
    return text;
  }

  async view(now = Date.now()): Promise<LeaseView | undefined> {
    const r = await this.read();
    return "ok" in r && r.ok ? viewOf(r.ok, now) : undefined;
  }

  acquire(then = `relay infty resume ${this.runId}`): Promise<Result<LeaseGrant>> {
    return this.locked(async () => {
      const current = await this.read();
      if ("error" in current) return current;
      const prior = current.ok;
      const v = prior ? viewOf(prior) : ({ state: "free" } as const);
      // Held is held, also by this very process: two drivers in one process are two drivers.
      if (v.state === "held") return liveRefusal(this.runId, v, then);
      const now = new Date().toISOString();
      const record: LeaseRecord = {
        version: 1,
        epoch: (prior?.epoch ?? 0) + 1,
        holder: selfHolder(),
        acquired_at: now,
        heartbeat_at: now,
        released_at: null,
      };
      const written = await this.write(record);
      const tookOver =
        v.state === "stale" ? `took the run over from ${describeHolder(v.record.holder)} (${v.why})` : undefined;
      return ok(new FileGrant(this, record, written, tookOver));
    });
  }

  /** Runs `fn` holding lease.lock. */
  async locked<T>(fn: () => Promise<Result<T>>): Promise<Result<T>> {
    const lock = path.join(this.runDir, LOCK_FILE);
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        const fh = await open(lock, "wx");
        await fh.writeFile(JSON.stringify(selfHolder()));
        await fh.close();
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST")
          return err("lease_failed", `cannot lock ${lock}: ${errorMessage(e)}`);
      }
      const age = await stat(lock).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > LOCK_STALE_MS || (await lockHolderGone(lock))) await rm(lock, { force: true });
      else if (Date.now() > deadline)
        return err(
          "lease_busy",
          `${lock} has been held for ${Math.round(age / 1000)} s by another relay process; try again, or remove the file if no relay process runs on this run`,
        );
      else await pause(10);
    }
    try {
      return await fn();
    } finally {
      await rm(lock, { force: true });
    }
  }
}

class FileGrant implements LeaseGrant {
  constructor(
    private readonly lease: FileLease,
    private record: LeaseRecord,
    /** The text this grant last wrote: found unchanged, the lease is still ours without parsing it. */
    private written: string,
    readonly tookOver?: string,
  ) {}

  get epoch(): number {
    return this.record.epoch;
  }

  private ours(current: LeaseRecord | undefined): boolean {
    return stillOurs(this.record, current);
  }

  private lost(current: LeaseRecord | undefined): Result<never> {
    return leaseLost(current);
  }

  /** Run before every run.json write: one small read, and a parse only when someone else wrote the lease. */
  async check(): Promise<Result<void>> {
    const text = await this.lease.text().catch(() => undefined);
    if (text !== undefined && text === this.written) return ok(undefined);
    const current = await this.lease.read(text);
    if ("error" in current) return current;
    return this.ours(current.ok) ? ok(undefined) : this.lost(current.ok);
  }

  beat(): Promise<Result<void>> {
    return this.lease.locked(async () => {
      const current = await this.lease.read();
      if ("error" in current) return current;
      if (!this.ours(current.ok)) return this.lost(current.ok);
      this.record = { ...this.record, heartbeat_at: new Date().toISOString() };
      this.written = await this.lease.write(this.record);
      return ok(undefined);
    });
  }

  async release(): Promise<void> {
    await this.lease.locked(async () => {
      const current = await this.lease.read();
      if ("ok" in current && this.ours(current.ok))
        await this.lease.write({ ...this.record, released_at: new Date().toISOString() });
      return ok(undefined);
    });
  }
}
