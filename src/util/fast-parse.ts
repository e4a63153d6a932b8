/**
 * zod parses on the hot path (every frame a relay peer reads, the model's stream events, a tool
 * call's arguments, every rollout line read), through generated checks. `npm run build:validators`
 * (scripts/build-validators.ts) writes, next to each module that owns such schemas, a
 * `*-checks.generated.ts` module of plain functions, one per schema: each accepts exactly what
 * its schema accepts and builds the same output (defaults filled in, unknown keys stripped or
 * kept as the schema says, key order kept). The owning module hands them to `withChecks`, which
 * files each under its schema. `fastParse` runs a schema's check and asks zod only where the
 * check refuses, so every refusal carries zod's own message; a schema without a check is
 * parsed by zod.
 *
 * Why: a relay process waits between messages (for the model, for a command), and then zod's
 * generic parse runs cold: a code-mode `execute`'s params and answer took 40–80 µs each to check
 * after an idle of 2 ms, the generated checks 7–15 µs, in each of the two processes, on every
 * call (docs/performance.md). The schemas stay the one definition: test/util/fast-parse.test.ts
 * compares the two on generated values of every wire method, and test/util/validators.test.ts
 * fails when a committed check is not what the generator makes of its schema now.
 *
 * This module is also what the generated code imports: FAIL, the object type it builds, and
 * the few helpers it calls.
 */
import type { z } from "zod";

/** What a check returns where zod would report an issue. */
export const FAIL: unique symbol = Symbol("refused");

/** The schema a check was generated from, as the check receives it. */
export type Schema = z.ZodType;

/**
 * A generated check: the parsed value, or FAIL exactly where zod reports an issue. `schema` is
 * the one it was generated from; a check reads it only to reach a node it leaves to zod.
 */
export type Check = (value: unknown, schema: Schema) => unknown;

/** The objects generated checks read and build. */
export type Obj = Record<string, unknown>;

const checks = new WeakMap<object, Check>();

/**
 * Files each schema of `schemas` under the check of the same name in `generated` (a module
 * written by scripts/build-validators.ts, imported whole); returns `schemas`, which the owning
 * module exports as CHECKED_SCHEMAS for the generator to read. A name the module lacks (the
 * generator running over a stale one) leaves its schema to zod.
 */
export function withChecks<S extends Record<string, z.ZodType>>(
  generated: { readonly [K in keyof S]: Check },
  schemas: S,
): S {
  for (const name of Object.keys(schemas)) {
    const check: unknown = generated[name];
    if (typeof check === "function") checks.set(schemas[name]!, check as Check);
  }
  return schemas;
}

/** The generated check filed for `schema`, if any. */
export function generatedCheck(schema: z.ZodType): Check | undefined {
  return checks.get(schema);
}

/** `schema.safeParse(value)`, through its generated check where that accepts. */
export function fastParse<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  const check = checks.get(schema);
  if (check !== undefined) {
    const out = check(value, schema);
    if (out !== FAIL) return { success: true, data: out as z.output<T> };
  }
  return schema.safeParse(value);
}

/** `schema.parse(value)`, through its generated check where that accepts: zod's error where it refuses. */
export function fastParseOrThrow<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const parsed = fastParse(schema, value);
  if (!parsed.success) throw parsed.error;
  return parsed.data;
}

/** A node of a schema that a generated check leaves to zod: zod's output, or FAIL. */
export function viaZod(node: z.ZodType, value: unknown): unknown {
  const r = node.safeParse(value);
  return r.success ? r.data : FAIL;
}

/** The `def` fields whose value holds schemas by key or index: the step after one of them picks it. */
const HOLDERS = new Set<string | number>(["shape", "options", "checks"]);

/**
 * The node of `schema` at `path`, read through each node's public `def`: `"shape", key`,
 * `"options", i`, `"checks", i`, `"element"`, `"innerType"`, `"valueType"`.
 */
export function zodPart(schema: z.ZodType, ...path: Array<string | number>): z.ZodType {
  let node: unknown = schema;
  for (let i = 0; i < path.length; i++) {
    const field = (node as { def: Record<string | number, unknown> }).def[path[i]!];
    node = HOLDERS.has(path[i]!) ? (field as Record<string | number, unknown>)[path[++i]!] : field;
  }
  return node as z.ZodType;
}

/**
 * Whether the refinement at `check` (a `.refine()`'s check, reached by zodPart) holds for
 * `value`. A refinement that answers with a promise fails a synchronous zod parse: zod says so.
 */
export function refinementHolds(check: z.ZodType, value: unknown): boolean {
  const r = (check as unknown as { def: { fn: (v: unknown) => unknown } }).def.fn(value);
  return !(r instanceof Promise) && Boolean(r);
}

/**
 * A string's length as zod's length checks count it: in code points (a pair of surrogates is
 * one). Generated checks call it only near a bound, where the UTF-16 units do not decide.
 */
export function codePoints(s: string): number {
  let count = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}
