/**
 * Packing a run's checkpoints from outside the driver's heap. A driver runs `relay infty pack
 * <run> --held-by <its pid>` as a child process and waits for it before its next checkpoint: a
 * merge reads and writes whole packs, and memory a process used it rarely gives back, so that
 * work is done where it ends with the process. The command itself (a person may run it too)
 * packs under the run's lease, or, started by the driver, only while that driver holds it.
 */
import { spawn } from "node:child_process";
import { selfCommand } from "../protocol/child.ts";
import { err, ok, type Result } from "../util/result.ts";
import { packIfDue } from "./checkpoint-pack.ts";
import { gitdirOf } from "./checkpoints.ts";
import { loadGit } from "./git-store.ts";
import type { RunLease } from "./lease.ts";
import { FileLease } from "./lease-file.ts";
import { FLEET_DB_ENV, type RunStore } from "./run-store.ts";

export interface PackOutcome {
  objects: number;
  merged: boolean;
}

/** Packs the run's checkpoints now (`force`: whatever is loose), holding its lease, or checking that `heldBy` does. */
export async function packRun(
  store: RunStore,
  o: { heldBy?: number; force?: boolean; lease?: RunLease } = {},
): Promise<Result<PackOutcome | null>> {
  const lease = o.lease ?? new FileLease(store.dir, store.id);
  if (o.heldBy !== undefined) {
    const v = await lease.view();
    if (v?.state !== "held" || v.record.holder.pid !== o.heldBy)
      return err("run_live", `run ${store.id}'s lease is not held by pid ${o.heldBy}; nothing was packed`);
    return packNow(store, o.force);
  }
  const grant = await lease.acquire(`relay infty pack ${store.id}`);
  if ("error" in grant) return grant;
  try {
    return await packNow(store, o.force);
  } finally {
    await grant.ok.release();
  }
}

async function packNow(store: RunStore, force = true): Promise<Result<PackOutcome | null>> {
  try {
    return ok((await packIfDue(await loadGit(), gitdirOf(store.dir), force)) ?? null);
  } catch (e) {
    return err(
      "pack_failed",
      `could not pack the checkpoints of run ${store.id}: ${(e as Error).message}; its loose objects stay as they are`,
    );
  }
}

/**
 * Runs `relay infty pack` for the driver (this process) of the run in `home` as a child; why it
 * failed, or undefined. A fleet run's driver holds the fleet's lease: the child checks that one,
 * given the DB in its environment (not its arguments, which other processes can read).
 */
export function packInChild(
  home: string,
  store: RunStore,
  force: boolean,
  fleetDb?: string,
): Promise<string | undefined> {
  const self = selfCommand();
  if ("error" in self) return Promise.resolve(self.error.message);
  const [cmd, ...pre] = self.ok;
  const args = [
    ...pre,
    "infty",
    "pack",
    store.id,
    "--held-by",
    String(process.pid),
    ...(force ? [] : ["--if-due"]),
    ...(fleetDb ? ["--fleet-lease"] : []),
  ];
  const env = { ...process.env, RELAY_HOME: home, ...(fleetDb ? { [FLEET_DB_ENV]: fleetDb } : {}) };
  return new Promise((resolve) => {
    const child = spawn(cmd!, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-2000)));
    child.once("error", (e) => resolve(`could not start ${cmd}: ${e.message}`));
    child.once("close", (code) => resolve(code === 0 ? undefined : stderr.trim() || `relay infty pack exited ${code}`));
  });
}
