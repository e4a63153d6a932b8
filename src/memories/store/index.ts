/**
 * The memories store as other rooms see it (`relay memories`' inspection commands): the state DB
 * and the reads and forgets they make. The pipeline inside memories/ imports the store's modules
 * directly.
 */
export { openStateDb, type StateDb } from "./db.ts";
export { listLeases } from "./leases.ts";
export { forgetThread, getOutput, listOutputs, statusCounts } from "./outputs.ts";
export { readPhase2Job } from "./phase2.ts";
export { getThread } from "./threads.ts";
export { PHASE2_KIND } from "./tx.ts";
