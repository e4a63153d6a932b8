/**
 * The infty orchestrator: drives a Solver with a Director and N Verifiers until a verified
 * deliverable exists. Its whole state is in run.json: `pending` (what must happen next) and
 * `inflight` (a message handed to a role whose answer is not used yet). Each transition is one
 * atomic write, so `relay infty resume` replays at most the one a crash interrupted: an answer
 * already in a role's rollout is used, not asked for again, and a run whose deliverable was
 * accepted is complete, whatever else the crash cut short.
 *
 * This module is the run's entry: it opens the store and takes the lease; the run itself is in
 * infty/run/ (the driver in run/driver.ts, the store's setup in run/store-setup.ts, the options,
 * events and result in run/options.ts).
 */

import os from "node:os";
import { Log } from "../util/log.ts";
import { err, type Result } from "../util/result.ts";
import { dropReadCache } from "./git-store.ts";
import { FileLease } from "./lease-file.ts";
import { pushDelivery } from "./push-delivery.ts";
import { checkoutDir } from "./repo/record.ts";
import { InftyRun } from "./run/driver.ts";
import type { InftyOptions, InftyResult } from "./run/options.ts";
import { completeFromRecord, createStore, loadStore, prepareResume } from "./run/store-setup.ts";
import { LeaseLostError } from "./run-store.ts";

export type { InftyEvent, InftyOptions, InftyResult } from "./run/options.ts";
export { InftyScriptSchema, scriptedModels } from "./run/options.ts";

const log = Log.create("infty");

export async function runInfty(o: InftyOptions): Promise<Result<InftyResult>> {
  const opened = o.resume ? await loadStore(o) : await createStore(o);
  if ("error" in opened) return opened;
  const store = opened.ok;
  // One driver per run: nothing of the run is written before this process holds its lease.
  const grant = await (o.lease ?? ((dir, id) => new FileLease(dir, id)))(store.dir, store.id).acquire();
  if ("error" in grant) return grant;
  await store.fenceWith(grant.ok);
  try {
    if (o.resume) {
      const prepared = await prepareResume(o, store);
      if ("error" in prepared) return prepared;
      // What the resume read of the checkpoints (whole packs) is not kept while the run goes on.
      dropReadCache();
    }
    const repo = store.state.repo;
    o.report({
      type: "run_started",
      run_id: store.id,
      dir: store.dir,
      resumed: Boolean(o.resume),
      objective: store.state.objective,
      ...(repo
        ? {
            repo: {
              path: repo.path,
              branch: repo.branch,
              checkout: checkoutDir(store.dir),
              base_commit: repo.base_commit,
            },
          }
        : {}),
    });
    await store.log({
      type: "run_started",
      resumed: Boolean(o.resume),
      pid: process.pid,
      host: os.hostname(),
      lease_epoch: grant.ok.epoch,
    });
    if (grant.ok.tookOver) {
      o.report({ type: "warning", message: grant.ok.tookOver });
      await store.log({ type: "warning", message: grant.ok.tookOver });
    }
    log.info("run started", { run_id: store.id, resumed: Boolean(o.resume), epoch: grant.ok.epoch });
    const r = store.state.deliverable ? await completeFromRecord(o, store) : await new InftyRun(o, store).drive();
    return await pushDelivery(o, store, r);
  } catch (e) {
    if (e instanceof LeaseLostError) return err("lease_lost", `run ${store.id}: ${e.message}`);
    throw e;
  } finally {
    await grant.ok.release();
  }
}
