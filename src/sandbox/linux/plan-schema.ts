/**
 * The confinement plan as it crosses from the executor to the helper on the command line: the
 * Landlock rights to handle, one rule per path, the scopes, the paths to bind read-only, and
 * whether sockets are filtered. The helper checks it with plan-guard.ts (it must not load zod);
 * a test keeps the two in agreement.
 */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";

const mask = lazySchema(() => z.number().int().min(0).max(0xffffffff));

/** The executor's container: its init's pid and start time (field 22 of /proc/PID/stat), so a reused pid is never joined. */
export const ContainerRefSchema = lazySchema(() =>
  z.object({ pid: z.number().int().min(2), start: z.string().regex(/^[0-9]+$/) }),
);
export type ContainerRef = z.infer<typeof ContainerRefSchema>;

export const ConfinePlanSchema = lazySchema(() =>
  z.object({
    abi: z.number().int().min(0),
    handledFs: mask,
    handledNet: mask,
    scoped: mask,
    rules: z.array(z.object({ path: z.string().startsWith("/"), access: mask })),
    /** Paths to bind read-only in a private mount namespace before confining. */
    readOnly: z.array(z.string().startsWith("/")),
    /** Named Unix sockets to cover with /dev/null in that namespace (network off; unix-sockets.ts). */
    hide: z.array(z.string().startsWith("/")).default([]),
    /** Whether socket() is filtered (network off). */
    filterSockets: z.boolean(),
    /**
     * What the running kernel could not enforce: with best effort anything; otherwise only the
     * named sockets a host without user namespaces cannot hide (docs/sandbox.md).
     */
    gaps: z.array(z.string()),
    /** Variables set only for the helper, with the command's own value (null: unset) to put back. */
    restoreEnv: z.record(z.string(), z.string().nullable()).default({}),
    /** Run the command inside the executor's container, so it cannot outlive the executor. */
    container: ContainerRefSchema.optional(),
  }),
);
export type ConfinePlan = z.infer<typeof ConfinePlanSchema>;
export type LandlockRule = ConfinePlan["rules"][number];

/** What the executor sends a warm helper on its stdin: the command to confine and run. */
export const WarmRequestSchema = lazySchema(() =>
  z.object({
    plan: ConfinePlanSchema,
    argv: z.array(z.string()).min(1),
    env: z.record(z.string(), z.string()),
    cwd: z.string().startsWith("/"),
  }),
);
export type WarmRequest = z.infer<typeof WarmRequestSchema>;

/** The program a helper runs once confined. */
export interface ExecTarget {
  /** Absolute path of the program. */
  file: string;
  argv: readonly string[];
  env: Record<string, string | undefined>;
}
