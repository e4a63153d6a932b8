/**
 * A capability root: where skills are discovered, and on which environment. Its path is opaque
 * here: only the executor of that environment resolves it, and a root whose environment is
 * missing gives nothing (never a read of the local filesystem instead).
 *
 * On the command line: `--capability-root id=deploy@1,env=build,path=/opt/plugins/deploy`, or
 * the short `build:/opt/plugins/deploy`, whose id is derived from both (`build:/opt/plugins/deploy`).
 * In config.toml: `[[capability_roots]]` tables with id, environment, path. Recorded in rollouts
 * and run.json as the schema's JSON; the older `["env:path"]` strings still read back.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";

/** An environment's name: what `--environment NAME=...` and `--executor-name` give. */
export const EnvironmentNameSchema = lazySchema(() =>
  z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
      "must be letters, digits, '_', '.' or '-' (starting with a letter or digit)",
    ),
);

export const RootLocationSchema = lazySchema(() =>
  z.object({
    type: z.literal("environment"),
    environmentId: EnvironmentNameSchema,
    path: z.string().min(1),
  }),
);

export const CapabilityRootSchema = lazySchema(() =>
  z.object({
    id: z.string().min(1),
    location: RootLocationSchema,
  }),
);
export type CapabilityRoot = z.infer<typeof CapabilityRootSchema>;

/** `[[capability_roots]]` in config.toml. */
export const CapabilityRootConfigSchema = lazySchema(() =>
  z.object({
    id: z.string().min(1).optional(),
    environment: EnvironmentNameSchema,
    path: z.string().min(1),
  }),
);
export type CapabilityRootConfig = z.infer<typeof CapabilityRootConfigSchema>;

/** A stable id for a root given without one: the short spec itself. */
export const derivedRootId = (environmentId: string, p: string): string => `${environmentId}:${p}`;

export function capabilityRoot(environmentId: string, p: string, id?: string): CapabilityRoot {
  return { id: id ?? derivedRootId(environmentId, p), location: { type: "environment", environmentId, path: p } };
}

const USAGE = "--capability-root takes <environment>:<absolute path> or id=<id>,env=<environment>,path=<path>";
const KEYS: Record<string, "id" | "env" | "path"> = { id: "id", env: "env", environment: "env", path: "path" };

/** `env:path`, or `id=..,env=..,path=..` (a comma in a value that is not followed by a key stays in it). */
export function parseCapabilityRoot(spec: string): Result<CapabilityRoot> {
  const bad = (why: string) =>
    err(
      "invalid_capability_root",
      `${USAGE} (got ${JSON.stringify(spec)}: ${why}), e.g. local:/home/me/skills or id=deploy@1,env=build,path=/opt/plugins/deploy`,
    );
  const keyed = /^(id|env|environment|path)=/.test(spec);
  let env: string | undefined;
  let p: string | undefined;
  let id: string | undefined;
  if (keyed) {
    const fields: Partial<Record<"id" | "env" | "path", string>> = {};
    let last: "id" | "env" | "path" | undefined;
    for (const part of spec.split(",")) {
      const m = /^([a-z]+)=(.*)$/.exec(part);
      const key = m ? KEYS[m[1]!] : undefined;
      if (key) {
        if (fields[key] !== undefined) return bad(`${key} given twice`);
        fields[key] = m![2]!;
        last = key;
      } else if (last) fields[last] += `,${part}`;
    }
    ({ env, path: p, id } = fields);
    if (id === "") return bad("empty id");
  } else {
    const i = spec.indexOf(":");
    if (i > 0) [env, p] = [spec.slice(0, i), spec.slice(i + 1)];
  }
  if (!env) return bad("no environment");
  if (!p) return bad("no path");
  const name = EnvironmentNameSchema.safeParse(env);
  if (!name.success) return bad(`environment ${JSON.stringify(env)} ${name.error.issues[0]!.message}`);
  return ok(capabilityRoot(env, p, id));
}

export function formatCapabilityRoot(r: CapabilityRoot): string {
  const { environmentId, path: p } = r.location;
  return r.id === derivedRootId(environmentId, p) ? r.id : `id=${r.id},env=${environmentId},path=${p}`;
}

/** A recorded root: the schema's JSON, or the older `env:path` string; undefined when neither. */
export function recordedRoot(v: unknown): CapabilityRoot | undefined {
  if (typeof v === "string") {
    const r = parseCapabilityRoot(v);
    return "ok" in r ? r.ok : undefined;
  }
  const parsed = CapabilityRootSchema.safeParse(v);
  return parsed.success ? parsed.data : undefined;
}

/** Roots from config.toml, ids derived where none is given. */
export const configRoots = (c: CapabilityRootConfig[] | undefined): CapabilityRoot[] =>
  (c ?? []).map((r) => capabilityRoot(r.environment, r.path, r.id));

/** The first id given to two roots, if any. */
export function duplicateRootId(roots: CapabilityRoot[]): string | undefined {
  const seen = new Set<string>();
  for (const r of roots) {
    if (seen.has(r.id)) return r.id;
    seen.add(r.id);
  }
  return undefined;
}
