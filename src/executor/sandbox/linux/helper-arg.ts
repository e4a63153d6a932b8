/** The hidden argv word that runs relay as the sandbox helper (see helper.ts). */
export const SANDBOX_EXEC_ARG = "__sandbox-exec";
