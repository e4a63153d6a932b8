/**
 * util/fast-parse.ts: the compiled check accepts exactly what zod accepts and builds the same
 * output, key order and kept `undefined`s included; what it refuses gets zod's own error.
 * Hand-made cases for each kind of node, then generated values for every wire method relay has.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import * as codemode from "../../src/contracts/code-mode.ts";
import * as envelope from "../../src/contracts/envelope.ts";
import { ExecCommandArgsSchema, WriteStdinArgsSchema } from "../../src/contracts/exec-tools.ts";
import * as executor from "../../src/contracts/executor.ts";
import * as mcp from "../../src/contracts/mcp-bridge.ts";
import * as projectDocs from "../../src/executor/project-docs.ts";
import * as skills from "../../src/executor/skills.ts";
import { ChunkSchema } from "../../src/model/chat.ts";
import { ResponseItemSchema } from "../../src/model/items.ts";
import { StreamEventSchema } from "../../src/model/responses.ts";
import * as rolloutLines from "../../src/rollout/schema.ts";
import { compiledWithoutZod, fastParse } from "../../src/util/fast-parse.ts";
import { lazySchema } from "../../src/util/lazy-schema.ts";
import { prng } from "../support/prng.ts";

/** A value as JSON that keeps what JSON drops: undefined, bigints, key order. */
function shown(v: unknown): string {
  return (
    JSON.stringify(v, (_k, x: unknown) => (x === undefined ? "<undefined>" : typeof x === "bigint" ? `<${x}n>` : x)) ??
    "<undefined>"
  );
}

/** The prototypes of a value's objects, depth first: a `__proto__` key must never set one. */
function prototypes(v: unknown): string {
  if (v === null || typeof v !== "object") return "";
  const proto = Object.getPrototypeOf(v) as unknown;
  const name = proto === Object.prototype ? "O" : proto === Array.prototype ? "A" : proto === null ? "N" : "?";
  return `${name}(${Object.values(v).map(prototypes).join(",")})`;
}

/** Both parses of `value`: the same verdict, the same output, zod's issues on a refusal. */
function same(schema: z.ZodType, value: unknown, label = ""): boolean {
  const fast = fastParse(schema, value);
  const slow = schema.safeParse(value);
  const what = `${label} ${shown(value)}`;
  assert.equal(fast.success, slow.success, `verdict differs for ${what}`);
  if (fast.success && slow.success) {
    assert.deepStrictEqual(fast.data, slow.data, `output differs for ${what}`);
    assert.equal(shown(fast.data), shown(slow.data), `key order differs for ${what}`);
    assert.equal(prototypes(fast.data), prototypes(slow.data), `prototypes differ for ${what}`);
  } else {
    assert.deepStrictEqual(fast.error?.issues, slow.error?.issues, `issues differ for ${what}`);
  }
  return slow.success;
}

describe("fastParse: hand-made cases", () => {
  test("primitives, literals, enums and checks", () => {
    const values = [
      undefined,
      null,
      0,
      -1,
      1.5,
      NaN,
      Infinity,
      -Infinity,
      2 ** 53,
      2 ** 31,
      "",
      "a",
      "ab",
      "😀",
      "😀😀",
      "\ud83d",
      "/abs",
      "rel",
      true,
      false,
      0n,
      5n,
      [],
      {},
    ];
    const schemas: z.ZodType[] = [
      z.string(),
      z.string().min(1),
      z.string().min(2),
      z.string().max(1),
      z.string().startsWith("/"),
      z.number(),
      z.number().int(),
      z.number().int().min(0).max(10),
      z.number().gt(0).lt(2),
      z.boolean(),
      z.null(),
      z.bigint().min(0n).max(10n),
      z.literal("a"),
      z.literal([1, "a"]),
      z.enum(["a", "ab"]),
      z.unknown(),
      z.any(),
      z.string().refine((s) => s.startsWith("/"), "absolute"),
      z.int32(),
      z.email(),
      z.string().trim(),
      z.coerce.number(),
    ];
    for (const s of schemas) for (const v of values) same(s, v);
  });

  test("objects: optional, nullable, defaults, strict, unknown keys, keys on the prototype", () => {
    const s = z.object({
      a: z.string(),
      b: z.number().optional(),
      c: z.string().nullable(),
      d: z.array(z.string()).default([]),
      e: z.object({ x: z.boolean().default(false) }).default({ x: true }),
      f: z.unknown(),
    });
    const strict = z.object({ a: z.string(), b: z.string().optional() }).strict();
    const loose = z.looseObject({ a: z.string(), b: z.string().optional() });
    const passthrough = z.object({ c: z.string().nullable() }).passthrough();
    const checked = z.object({ a: z.string() }).catchall(z.number());
    const proto = z.object({ constructor: z.unknown(), toString: z.string().optional() });
    const inputs = [
      { a: "x", c: null },
      { a: "x", b: undefined, c: "y", d: ["q"], e: {}, f: 1, extra: 2 },
      { a: "x", c: null, e: undefined, d: undefined },
      { c: null },
      { a: 1, c: null },
      JSON.parse('{"a":"x","c":null,"__proto__":{"b":1}}'),
      { a: "x", b: "1", c: null },
      [],
      null,
    ];
    for (const v of inputs) {
      same(s, v);
      same(strict, v);
      same(proto, v);
      same(loose, v);
      same(passthrough, v);
      same(checked, v);
    }
    same(strict, { a: "x" });
    same(strict, { a: "x", b: undefined });
    same(proto, {});
  });

  test("a default hands out a fresh copy each time, as zod's does", () => {
    const s = z.object({
      list: z.array(z.string()).default(["a"]),
      map: z.object({ k: z.string() }).default({ k: "v" }),
    });
    const a = fastParse(s, {});
    const b = fastParse(s, {});
    assert.ok(a.success && b.success);
    assert.deepEqual(a.data, { list: ["a"], map: { k: "v" } });
    assert.notEqual(a.data.list, b.data.list);
    assert.notEqual(a.data.map, b.data.map);
    a.data.list.push("changed");
    assert.deepEqual(fastParse(s, {}).data, { list: ["a"], map: { k: "v" } });
  });

  test("unions pick the first option that accepts; a discriminated one goes by its tag", () => {
    const u = z.union([
      z.object({ a: z.string() }),
      z.object({ a: z.string(), b: z.number() }),
      z.string(),
      z.number().int(),
    ]);
    const du = z.discriminatedUnion("t", [
      z.object({ t: z.literal("x"), v: z.string() }),
      z.object({ t: z.enum(["y", "z"]), v: z.number() }),
    ]);
    const tagged = z.union([
      z.object({ Ok: z.string() }).strict(),
      z.object({ Err: z.object({ m: z.string() }) }).strict(),
    ]);
    for (const v of [
      { a: "1", b: 2 },
      { b: 2 },
      "s",
      3,
      3.5,
      { t: "x", v: "1" },
      { t: "y", v: 1 },
      { t: "z", v: "1" },
      { t: "q" },
      { Ok: "a" },
      { Err: { m: "b" } },
      { Ok: "a", Err: { m: "b" } },
      {},
    ]) {
      same(u, v);
      same(du, v);
      same(tagged, v);
    }
  });

  test("records: plain objects' own keys; __proto__ and odd objects as zod treats them", () => {
    const r = z.record(z.string(), z.string());
    const inputs: unknown[] = [
      {},
      { a: "1", b: "2" },
      { 2: "x", 1: "y", b: "z" },
      { a: 1 },
      JSON.parse('{"__proto__":"x","a":"b"}'),
      Object.create(null),
      new Date(),
      [],
      { constructor: "c" },
      { [Symbol("s")]: "x" },
    ];
    for (const v of inputs) same(r, v);
    same(z.record(z.enum(["a", "b"]), z.number()), { a: 1, b: 2 });
  });

  test("lazy, recursive and nested lazySchema stand-ins", () => {
    interface Tree {
      name: string;
      kids: Tree[];
    }
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), kids: z.array(tree) }));
    const node = z.object({
      name: z.string(),
      get kids() {
        return z.array(node).optional();
      },
    });
    const inner = lazySchema(() => z.object({ n: z.number().int() }));
    const outer = lazySchema(() => z.object({ inner, list: z.array(inner) }));
    for (const v of [
      { name: "a", kids: [{ name: "b", kids: [] }] },
      { name: "a", kids: [{ name: 1, kids: [] }] },
      { name: "a" },
    ]) {
      same(tree, v);
      same(node, v);
    }
    for (const v of [{ inner: { n: 1 }, list: [{ n: 2 }] }, { inner: { n: 1.5 }, list: [] }, { inner: { n: 1 } }])
      same(outer, v);
  });
});

/** A random value for `schema`: mostly what it accepts, with wrong types, missing and extra keys mixed in. */
function generate(schema: z.ZodType, rnd: () => number, depth = 0): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const junk = [undefined, null, 0, -1, 1.5, NaN, 2 ** 53, "", "x", "/tmp/a", "😀", true, [], {}, 3n];
  if (rnd() < 0.06 || depth > 8) return pick(junk);
  const zod = (
    schema as unknown as { _zod: { def: Record<string, unknown> & { type: string }; values?: Set<unknown> } }
  )._zod;
  const def = zod.def;
  const sub = (s: unknown) => generate(s as z.ZodType, rnd, depth + 1);
  switch (def.type) {
    case "string":
      return pick(["", "a", "relay", "/work/x", "C:\\x", "😀", "a".repeat(70), "id-1"]);
    case "number":
      return pick([0, 1, 2, 7, 30, 1000, 10_000, -3, 0.5, 2 ** 31, Number.MAX_SAFE_INTEGER]);
    case "bigint":
      return pick([0n, 1n, 2n ** 64n]);
    case "boolean":
      return rnd() < 0.5;
    case "literal":
    case "enum":
      return pick([...(zod.values ?? [])]);
    case "optional":
    case "default":
      return rnd() < 0.3 ? undefined : sub(def.innerType);
    case "nullable":
      return rnd() < 0.2 ? null : sub(def.innerType);
    case "array":
      return Array.from({ length: Math.floor(rnd() * 3) }, () => sub(def.element));
    case "record":
      return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 3) }, (_, i) => [`k${i}`, sub(def.valueType)]));
    case "union":
      return sub(pick(def.options as unknown[]));
    case "lazy":
      return sub((def.getter as () => unknown)());
    case "pipe":
      return sub(def.in);
    case "object":
      return generateObject(def.shape as Record<string, z.ZodType>, rnd, sub);
    default:
      return pick(junk);
  }
}

function generateObject(
  shape: Record<string, z.ZodType>,
  rnd: () => number,
  sub: (s: unknown) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(shape)) {
    const r = rnd();
    if (r < 0.08) continue;
    out[key] = r < 0.12 ? undefined : sub(s);
  }
  if (rnd() < 0.1) out.extra_key = "x";
  return out;
}

/** Every method and notification spec exported by the modules of relay's wire protocols. */
function wireSchemas(): Array<[string, z.ZodType]> {
  const found: Array<[string, z.ZodType]> = [];
  const visit = (v: unknown): void => {
    if (v === null || typeof v !== "object") return;
    const spec = v as { name?: unknown; params?: z.ZodType; result?: z.ZodType };
    if (typeof spec.name === "string" && spec.params) {
      found.push([`${spec.name} params`, spec.params]);
      if (spec.result) found.push([`${spec.name} result`, spec.result]);
      return;
    }
    for (const inner of Object.values(v)) if (inner && typeof inner === "object" && !("_zod" in inner)) visit(inner);
  };
  for (const mod of [codemode, executor, mcp, skills, projectDocs]) for (const v of Object.values(mod)) visit(v);
  found.push(["envelope", envelope.EnvelopeSchema]);
  // What a session parses per model event and per tool call.
  found.push(
    ["responses stream event", StreamEventSchema],
    ["chat chunk", ChunkSchema],
    ["response item", ResponseItemSchema],
  );
  found.push(["exec_command arguments", ExecCommandArgsSchema], ["write_stdin arguments", WriteStdinArgsSchema]);
  // Every line of every rollout read (sessions, resume, memories' phase 1).
  for (const name of [
    "UnknownLineSchema",
    "SessionMetaLineSchema",
    "ResponseItemLineSchema",
    "EventMsgLineSchema",
    "TurnContextLineSchema",
    "CompactedLineSchema",
  ] as const) {
    found.push([`rollout ${name}`, rolloutLines[name]]);
  }
  return found;
}

describe("fastParse: generated values for every wire method", () => {
  const schemas = wireSchemas();

  test("the wire methods are all found", () => {
    const names = schemas.map(([n]) => n);
    for (const n of [
      "codemode/execute params",
      "codemode/execute result",
      "process/exec params",
      "process/exec result",
      "mcp/message params",
    ]) {
      assert.ok(
        names.some((x) => x.startsWith(n.split(" ")[0]!)),
        `${n} not found among ${names.length}`,
      );
    }
    assert.ok(schemas.length > 40, `only ${schemas.length} schemas found`);
  });

  test("the same verdict and output as zod on 200 values per schema", () => {
    const rnd = prng(20261204);
    let accepted = 0;
    let refused = 0;
    for (const [name, schema] of schemas) {
      for (let i = 0; i < 200; i++) {
        if (same(schema, generate(schema, rnd), name)) accepted++;
        else refused++;
      }
    }
    // Both verdicts must be well represented, or the comparison shows little.
    assert.ok(accepted > schemas.length * 20, `only ${accepted} values accepted`);
    assert.ok(refused > schemas.length * 20, `only ${refused} values refused`);
  });

  test("the messages of every tool call are checked without zod", () => {
    for (const spec of [
      codemode.CodeModeMethods.execute,
      codemode.CodeModeMethods.hello,
      executor.ExecutorMethods.exec,
      executor.ExecutorMethods.write,
    ]) {
      assert.ok(compiledWithoutZod(spec.params), `${spec.name} params ask zod`);
      assert.ok(compiledWithoutZod(spec.result), `${spec.name} result asks zod`);
    }
    for (const schema of [StreamEventSchema, ResponseItemSchema, ExecCommandArgsSchema])
      assert.ok(compiledWithoutZod(schema));
    assert.equal(compiledWithoutZod(z.email()), false);
  });
});
