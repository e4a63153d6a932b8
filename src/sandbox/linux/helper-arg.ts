/** The hidden argv word that runs relay as the sandbox helper (see helper.ts). */
export const SANDBOX_EXEC_ARG = "__sandbox-exec";
/** `relay __sandbox-exec --wait`: a warm helper that reads its command from stdin. */
export const SANDBOX_WAIT_FLAG = "--wait";

/**
 * Set for the helper only, and put back to the command's own values before it execs: with
 * them Bun starts no JIT, warm-up or allocator thread, so the helper is single-threaded and
 * can unshare a user namespace in place. (If a Bun upgrade adds a thread, the helper forks
 * instead; test/sandbox/escape.test.ts notices.)
 */
export const SINGLE_THREAD_ENV: Readonly<Record<string, string>> = {
  BUN_JSC_useConcurrentJIT: "0",
  BUN_JSC_useWarmUpMarkedBlocks: "0",
  MIMALLOC_PURGE_DELAY: "-1",
};
