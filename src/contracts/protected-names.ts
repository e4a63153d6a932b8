/**
 * Directories whose `.git` / `.relay` stay read-only even when the directory is writable;
 * `.checkpoints.git` is an infty run's checkpoint history, in the roles' working directory.
 * Both the sandbox's plans and the executor's file tools keep to it; its own module so the
 * sandbox helper reads it without loading zod.
 */
export const PROTECTED_NAMES = [".git", ".relay", ".checkpoints.git"];
