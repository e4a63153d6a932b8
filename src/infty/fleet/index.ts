/**
 * The infty fleet (loaded on demand, when a command names a fleet DB): its database, the runs'
 * Postgres lease, the queue of runs and its workers, and the worker that drives them.
 */
export { type FleetDb, openFleetDb } from "./db.ts";
export { PgLease } from "./lease-pg.ts";
export type { Submission } from "./queue.ts";
export { finishRun, listRuns, listWorkers, requeueAfterCrash, submitRun } from "./queue.ts";
export { requestNote, requestStop, requeueRun, watchRequests } from "./requests.ts";
export type { FleetRun, FleetView, FleetWorker } from "./view-format.ts";
export { FLEET_CHILD_ENV, leaseTimeoutMs, runWorker, watchWorker } from "./worker.ts";
