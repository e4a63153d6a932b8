/**
 * Hand-made schemas for test/util/fast-parse.test.ts, one or more per kind of node the validator
 * generator knows (and some it leaves to zod). Their checks are generated like src's
 * (npm run build:validators writes fast-parse-cases-checks.generated.ts next to this file), so
 * the edge cases run against real generated code.
 */
import { z } from "zod";
import { withChecks } from "../../src/util/fast-parse.ts";
import { lazySchema } from "../../src/util/lazy-schema.ts";
import { httpUrl } from "../../src/util/schema-fields.ts";
import * as checks from "./fast-parse-cases-checks.generated.ts";

interface Tree {
  name: string;
  kids: Tree[];
}
const lazyTree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), kids: z.array(lazyTree) }));
const getterTree = z.object({
  name: z.string(),
  get kids() {
    return z.array(getterTree).optional();
  },
});
const inner = lazySchema(() => z.object({ n: z.number().int() }));

/** Primitives, literals, enums and checks, each tried on the same values. */
export const PRIMITIVES = {
  string: z.string(),
  stringMin1: z.string().min(1),
  stringMin2: z.string().min(2),
  stringMax1: z.string().max(1),
  stringStartsWith: z.string().startsWith("/"),
  number: z.number(),
  int: z.number().int(),
  intZeroToTen: z.number().int().min(0).max(10),
  betweenZeroAndTwo: z.number().gt(0).lt(2),
  boolean: z.boolean(),
  nullValue: z.null(),
  bigintRange: z.bigint().min(0n).max(10n),
  bigintAbove: z.bigint().gt(0n),
  literalA: z.literal("a"),
  literalMixed: z.literal([1, "a"]),
  enumAB: z.enum(["a", "ab"]),
  enumMany: z.enum(["a", "b", "c", "d", "e", "f"]),
  unknownValue: z.unknown(),
  anyValue: z.any(),
  refinedAbsolute: z.string().refine((s) => s.startsWith("/"), "absolute"),
  /** A refinement by a function of src/util/predicates.ts: a call of it by name. */
  httpUrl,
  regexName: z.string().regex(/^[a-z][a-z0-9_]*$/, "a name"),
  regexFolded: z.string().regex(/^relay/i),
  regexTwice: z
    .string()
    .min(1)
    .regex(/^[a-z]/)
    .regex(/[0-9]$/),
  /** A global pattern's test keeps its position between calls: left to zod. */
  regexGlobal: z.string().regex(/a/g),
  int32: z.int32(),
  email: z.email(),
  trimmed: z.string().trim(),
  coercedNumber: z.coerce.number(),
};

/** Objects: optional, nullable, defaults, strict, unknown keys, keys on the prototype. */
export const OBJECTS = {
  objectMixed: z.object({
    a: z.string(),
    b: z.number().optional(),
    c: z.string().nullable(),
    d: z.array(z.string()).default([]),
    e: z.object({ x: z.boolean().default(false) }).default({ x: true }),
    f: z.unknown(),
  }),
  objectStrict: z.object({ a: z.string(), b: z.string().optional() }).strict(),
  objectLoose: z.looseObject({ a: z.string(), b: z.string().optional() }),
  objectPassthrough: z.object({ c: z.string().nullable() }).passthrough(),
  objectManyKeysLoose: z.looseObject({ a: z.string(), b: z.string().optional(), c: z.unknown(), d: z.null() }),
  objectCatchall: z.object({ a: z.string() }).catchall(z.number()),
  objectProtoKeys: z.object({ constructor: z.unknown(), toString: z.string().optional() }),
  /** Keys whose optional input and output mix otherwise: a default made optional, a preprocess. */
  objectOddKeys: z.object({
    a: z.string().default("x").optional(),
    b: z.preprocess((v) => v ?? "filled", z.string()),
    c: z.union([z.string(), z.number().default(1)]),
    d: z.preprocess((v) => v, z.unknown()),
  }),
  objectRefined: z.object({ a: z.number(), b: z.number() }).refine((o) => o.a < o.b),
};

/** Defaults handed out as fresh copies. */
export const DEFAULTS = {
  freshDefaults: z.object({
    list: z.array(z.string()).default(["a"]),
    map: z.object({ k: z.string() }).default({ k: "v" }),
  }),
};

/** Unions in order, by their tag, and externally tagged. */
export const UNIONS = {
  unionInOrder: z.union([
    z.object({ a: z.string() }),
    z.object({ a: z.string(), b: z.number() }),
    z.string(),
    z.number().int(),
  ]),
  unionTagged: z.discriminatedUnion("t", [
    z.object({ t: z.literal("x"), v: z.string() }),
    z.object({ t: z.enum(["y", "z"]), v: z.number() }),
  ]),
  unionExternallyTagged: z.union([
    z.object({ Ok: z.string() }).strict(),
    z.object({ Err: z.object({ m: z.string() }) }).strict(),
  ]),
  unionExclusive: z.xor([z.string(), z.number()]),
};

/** Records: string keys, enum keys. */
export const RECORDS = {
  recordStrings: z.record(z.string(), z.string()),
  recordEnumKeys: z.record(z.enum(["a", "b"]), z.number()),
  recordUnknown: z.record(z.string(), z.unknown()),
};

/** Lazy, recursive and nested lazySchema stand-ins. */
export const LAZY = {
  lazyTree,
  getterTree,
  nestedLazySchema: lazySchema(() => z.object({ inner, list: z.array(inner) })),
};

/** Every case, by the names of their generated checks (npm run build:validators). */
export const CHECKED_SCHEMAS = withChecks(checks, {
  ...PRIMITIVES,
  ...OBJECTS,
  ...DEFAULTS,
  ...UNIONS,
  ...RECORDS,
  ...LAZY,
});
