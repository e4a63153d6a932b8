/**
 * ConfinePlanSchema's check without zod: the helper runs once per sandboxed command and zod's
 * import alone costs it tens of milliseconds. test/sandbox/plan-guard.test.ts checks
 * that this guard and the schema accept and refuse the same plans.
 */
import type { ConfinePlan, WarmRequest } from "./plan-schema.ts";

const isMask = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 0xffffffff;
const isAbsolute = (v: unknown): v is string => typeof v === "string" && v.startsWith("/");
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The first problem with `v` as a plan, or undefined when it is one. */
export function planProblem(v: unknown): string | undefined {
  if (!isObject(v)) return "the plan is not an object";
  if (!Number.isInteger(v.abi) || (v.abi as number) < 0) return "abi must be a non-negative integer";
  for (const k of ["handledFs", "handledNet", "scoped"] as const)
    if (!isMask(v[k])) return `${k} must be a 32-bit mask`;
  if (!Array.isArray(v.rules)) return "rules must be an array";
  for (const [i, r] of v.rules.entries()) {
    if (!isObject(r) || !isAbsolute(r.path) || !isMask(r.access))
      return `rules.${i} must be {path: absolute path, access: mask}`;
  }
  if (!Array.isArray(v.readOnly) || !v.readOnly.every(isAbsolute)) return "readOnly must be an array of absolute paths";
  if (v.hide !== undefined && (!Array.isArray(v.hide) || !v.hide.every(isAbsolute)))
    return "hide must be an array of absolute paths";
  if (typeof v.filterSockets !== "boolean") return "filterSockets must be a boolean";
  if (!Array.isArray(v.gaps) || !v.gaps.every((g) => typeof g === "string")) return "gaps must be an array of strings";
  if (v.restoreEnv !== undefined) {
    if (!isObject(v.restoreEnv)) return "restoreEnv must be an object";
    for (const [k, val] of Object.entries(v.restoreEnv))
      if (val !== null && typeof val !== "string") return `restoreEnv.${k} must be a string or null`;
  }
  if (v.container !== undefined) {
    const c = v.container;
    if (
      !isObject(c) ||
      !Number.isInteger(c.pid) ||
      (c.pid as number) < 2 ||
      typeof c.start !== "string" ||
      !/^[0-9]+$/.test(c.start)
    ) {
      return "container must be {pid: integer from 2, start: decimal string}";
    }
  }
  return undefined;
}

/** JSON text checked by `problemOf`; `what` names it in the messages. */
function parseChecked<T>(
  text: string,
  what: string,
  problemOf: (v: unknown) => string | undefined,
): { ok: T } | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { problem: `${what} is not valid JSON: ${(e as Error).message}` };
  }
  const problem = problemOf(v);
  return problem ? { problem: `${what} is malformed: ${problem}` } : { ok: v as T };
}

/** An older executor may leave hide and restoreEnv out; the schema's defaults are empty ones. */
const withDefaults = (plan: ConfinePlan): ConfinePlan => ({
  ...plan,
  hide: plan.hide ?? [],
  restoreEnv: plan.restoreEnv ?? {},
});

export function parsePlan(text: string): { ok: ConfinePlan } | { problem: string } {
  const r = parseChecked<ConfinePlan>(text, "the sandbox plan", planProblem);
  return "ok" in r ? { ok: withDefaults(r.ok) } : r;
}

/** The first problem with `v` as a warm helper's request (WarmRequestSchema), or undefined. */
export function warmRequestProblem(v: unknown): string | undefined {
  if (!isObject(v)) return "the request is not an object";
  const plan = planProblem(v.plan);
  if (plan) return `plan: ${plan}`;
  if (!Array.isArray(v.argv) || v.argv.length === 0 || !v.argv.every((a) => typeof a === "string"))
    return "argv must be a non-empty array of strings";
  if (!isObject(v.env) || !Object.values(v.env).every((e) => typeof e === "string"))
    return "env must map names to strings";
  if (!isAbsolute(v.cwd)) return "cwd must be an absolute path";
  return undefined;
}

export function parseWarmRequest(text: string): { ok: WarmRequest } | { problem: string } {
  const r = parseChecked<WarmRequest>(text, "the warm helper's request", warmRequestProblem);
  return "ok" in r ? { ok: { ...r.ok, plan: withDefaults(r.ok.plan) } } : r;
}

/**
 * The largest spawn request the executor sends its container's init; larger ones go through a
 * helper. A SOCK_SEQPACKET message must also fit the socket's send buffer (about 208 KiB by
 * default, net.core.wmem_default), or the send fails and a helper takes it all the same.
 */
export const MAX_SPAWN_REQUEST = 192 * 1024;
/** What the init reads at most: more than any request, so none is ever cut short. */
export const SPAWN_READ_BYTES = 256 * 1024;

/**
 * What the executor sends its container's init for one command: a warm request with its id,
 * and the ids of ended commands it is done with (released once this one has started).
 */
export type SpawnRequest = WarmRequest & { id: number; release?: number[] };

export function parseSpawnRequest(text: string): { ok: SpawnRequest } | { problem: string; id?: number } {
  // The id, where there is one, tells the executor which request was refused.
  let id: number | undefined;
  const r = parseChecked<SpawnRequest>(text, "the spawn request", (v) => {
    if (!isObject(v)) return warmRequestProblem(v);
    if (!isId(v.id)) return "id must be a positive integer";
    id = v.id;
    if (v.release !== undefined && !(Array.isArray(v.release) && v.release.every(isId)))
      return "release must be an array of positive integers";
    return warmRequestProblem(v);
  });
  if ("ok" in r) return { ok: { ...r.ok, plan: withDefaults(r.ok.plan) } };
  return id === undefined ? r : { ...r, id };
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;

/**
 * The executor's release of commands it is done with, `{"release":[ids]}` (no descriptor comes
 * with it): their zombies may go. Undefined for a message that is no release; a malformed one
 * releases nothing (and is not answered: an answer without an id would settle a spawn).
 */
export function parseRelease(text: string): number[] | undefined {
  if (!text.startsWith('{"release":')) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    if (isObject(v) && Array.isArray(v.release) && v.release.every(isId)) return v.release;
  } catch {
    // not JSON: releases nothing
  }
  return [];
}
