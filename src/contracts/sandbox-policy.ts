/** The sandbox attempt the orchestrator selected; the executor applies it or fails closed. */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";

/** The sandbox modes, as a list a command line's choices take without building the schema. */
export const SANDBOX_MODES = ["read-only", "workspace-write", "danger-full-access"] as const;
export const SandboxModeSchema = lazySchema(() => z.enum(SANDBOX_MODES));
export type SandboxMode = z.infer<typeof SandboxModeSchema>;

/** How a policy is enforced: `auto` prefers the built-in Landlock sandbox, then bubblewrap. */
export const SANDBOX_MECHANISMS = ["auto", "landlock", "bwrap"] as const;
export const SandboxMechanismSchema = lazySchema(() => z.enum(SANDBOX_MECHANISMS));
export type SandboxMechanism = z.infer<typeof SandboxMechanismSchema>;

export const SandboxPolicySchema = lazySchema(() =>
  z.object({
    mode: SandboxModeSchema,
    /** Absolute roots that may be written under `workspace-write` (the cwd is usually one). */
    writable_roots: z.array(z.string()).default([]),
    /** Network access inside the sandbox (`workspace-write` only; read-only never has it). */
    network: z.boolean().default(false),
    /**
     * Absolute paths that stay read-only although a writable root or temp dir holds them (as
     * `.git` does): an infty run's own files when its run store lies in a writable place.
     */
    read_only_paths: z.array(z.string()).optional(),
    /** `workspace-write` also makes /tmp writable unless this is false (writes confined to the roots). */
    tmp_writable: z.boolean().optional(),
    mechanism: SandboxMechanismSchema.optional(),
    /** Run with what the kernel can enforce when it cannot enforce everything (said in the header). */
    best_effort: z.boolean().optional(),
  }),
);
export type SandboxPolicy = z.infer<typeof SandboxPolicySchema>;

export const FULL_ACCESS: SandboxPolicy = { mode: "danger-full-access", writable_roots: [], network: true };
