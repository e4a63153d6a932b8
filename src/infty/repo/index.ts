/**
 * A run's repository as the CLI sees it: the recorded checkout (record.ts), the diff of a run's
 * branch (checkout.ts) and applying a run's result to the user's repository (apply.ts).
 */
export { applyCommit, commitToApply } from "./apply.ts";
export { branchDiff } from "./checkout.ts";
export { checkoutDir, isFleetClone, type RepoRecord, shortCommit } from "./record.ts";
export { dirtyEntries, findRepository, isRepoUrl, type RepoRequest } from "./repository.ts";
