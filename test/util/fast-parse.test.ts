/**
 * util/fast-parse.ts and the generated checks (scripts/build-validators.ts): a check accepts
 * exactly what zod accepts and builds the same output, key order and kept `undefined`s included;
 * what it refuses gets zod's own error. Hand-made cases for each kind of node (their checks are
 * generated from test/util/fast-parse-cases.ts like src's), then generated values for every
 * schema relay checks this way.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { OWNERS } from "../../scripts/build-validators.ts";
import { checkedWithoutZod } from "../../scripts/validators/module.ts";
import * as codemode from "../../src/contracts/code-mode.ts";
import { ExecCommandArgsSchema } from "../../src/contracts/exec-tools.ts";
import * as executor from "../../src/contracts/executor.ts";
import { ResponseItemSchema } from "../../src/model/items.ts";
import { StreamEventSchema } from "../../src/model/responses.ts";
import { FAIL, fastParse, generatedCheck } from "../../src/util/fast-parse.ts";
import { prng } from "../support/prng.ts";
import { DEFAULTS, LAZY, OBJECTS, PRIMITIVES, RECORDS, UNIONS } from "./fast-parse-cases.ts";

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

/**
 * Both parses of `value`: the same verdict, the same output, zod's issues on a refusal. The
 * generated check itself accepts whatever zod accepts (a refusal would only cost a second parse,
 * unseen in the verdict), unless `conservative`: a value it leaves to zod on purpose.
 */
function same(schema: z.ZodType, value: unknown, label = "", conservative = false): boolean {
  const check = generatedCheck(schema);
  assert.ok(check, `${label}: no generated check is filed for this schema`);
  const fast = fastParse(schema, value);
  const slow = schema.safeParse(value);
  const what = `${label} ${shown(value)}`;
  assert.equal(fast.success, slow.success, `verdict differs for ${what}`);
  if (slow.success && !conservative)
    assert.notEqual(check(value, schema), FAIL, `the generated check refuses what zod accepts: ${what}`);
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
      "c",
      "f",
      "😀",
      "😀😀",
      "\ud83d",
      "/abs",
      "rel",
      true,
      false,
      0n,
      5n,
      11n,
      [],
      {},
    ];
    for (const [name, s] of Object.entries(PRIMITIVES)) for (const v of values) same(s, v, name);
  });

  test("objects: optional, nullable, defaults, strict, unknown keys, keys on the prototype, odd keys", () => {
    const inputs = [
      { a: "x", c: null },
      { a: "x", b: undefined, c: "y", d: ["q"], e: {}, f: 1, extra: 2 },
      { a: "x", c: null, e: undefined, d: undefined },
      { c: null },
      { a: 1, c: null },
      JSON.parse('{"a":"x","c":null,"__proto__":{"b":1}}'),
      { a: "x", b: "1", c: null },
      { a: "x", b: null, c: "s" },
      { a: undefined, b: undefined, c: undefined, d: undefined },
      { a: undefined, c: 2, d: null },
      { a: 1, b: 2 },
      { a: 2, b: 1 },
      { constructor: "c", toString: "t" },
      [],
      null,
    ];
    for (const [name, s] of Object.entries(OBJECTS)) {
      for (const v of inputs) same(s, v, name);
      same(s, {}, name);
      same(s, { a: "x" }, name);
      same(s, { a: "x", b: undefined }, name);
    }
  });
});

describe("fastParse: hand-made cases, continued", () => {
  test("a default hands out a fresh copy each time, as zod's does", () => {
    const s = DEFAULTS.freshDefaults;
    const a = fastParse(s, {});
    const b = fastParse(s, {});
    assert.ok(a.success && b.success);
    assert.deepEqual(a.data, { list: ["a"], map: { k: "v" } });
    assert.notEqual(a.data.list, b.data.list);
    assert.notEqual(a.data.map, b.data.map);
    a.data.list.push("changed");
    assert.deepEqual(fastParse(s, {}).data, { list: ["a"], map: { k: "v" } });
    same(s, { list: undefined, map: { k: "w" } }, "freshDefaults");
  });

  test("unions pick the first option that accepts; a discriminated one goes by its tag", () => {
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
      null,
    ]) {
      for (const [name, s] of Object.entries(UNIONS)) same(s, v, name);
    }
  });
});

describe("fastParse: hand-made records, lazy schemas, and what is left to zod", () => {
  test("records: plain objects' own keys; __proto__ and odd objects as zod treats them", () => {
    const inputs: unknown[] = [
      {},
      { a: "1", b: "2" },
      { 2: "x", 1: "y", b: "z" },
      { a: 1 },
      { a: 1, b: 2 },
      JSON.parse('{"__proto__":"x","a":"b"}'),
      JSON.parse('{"__proto__":{"polluted":"yes"},"a":"b"}'),
      Object.create(null),
      new Date(),
      [],
    ];
    for (const v of inputs) for (const [name, s] of Object.entries(RECORDS)) same(s, v, name);
    // An own `constructor` or a symbol key: zod's plain-object test is left to zod itself.
    for (const v of [{ constructor: "c" }, { [Symbol("s")]: "x" }])
      for (const [name, s] of Object.entries(RECORDS)) same(s, v, name, true);
  });

  test("lazy, recursive and nested lazySchema stand-ins", () => {
    for (const v of [
      { name: "a", kids: [{ name: "b", kids: [] }] },
      { name: "a", kids: [{ name: 1, kids: [] }] },
      { name: "a" },
    ]) {
      same(LAZY.lazyTree, v, "lazyTree");
      same(LAZY.getterTree, v, "getterTree");
    }
    for (const v of [{ inner: { n: 1 }, list: [{ n: 2 }] }, { inner: { n: 1.5 }, list: [] }, { inner: { n: 1 } }])
      same(LAZY.nestedLazySchema, v, "nestedLazySchema");
  });

  test("what the generator leaves to zod, and what it writes out", () => {
    for (const s of [PRIMITIVES.email, PRIMITIVES.trimmed, PRIMITIVES.coercedNumber, PRIMITIVES.bigintAbove])
      assert.equal(checkedWithoutZod(s), false);
    assert.equal(checkedWithoutZod(PRIMITIVES.regexGlobal), false);
    for (const s of [PRIMITIVES.httpUrl, PRIMITIVES.regexName, PRIMITIVES.regexFolded, PRIMITIVES.regexTwice])
      assert.equal(checkedWithoutZod(s), true);
    for (const s of [OBJECTS.objectCatchall, OBJECTS.objectOddKeys, UNIONS.unionExclusive, RECORDS.recordEnumKeys])
      assert.equal(checkedWithoutZod(s), false);
    for (const s of [LAZY.lazyTree, LAZY.getterTree]) assert.equal(checkedWithoutZod(s), false);
    for (const s of [PRIMITIVES.stringMin2, PRIMITIVES.refinedAbsolute, PRIMITIVES.bigintRange, PRIMITIVES.enumMany])
      assert.equal(checkedWithoutZod(s), true);
    for (const s of [UNIONS.unionInOrder, UNIONS.unionTagged, UNIONS.unionExternallyTagged, RECORDS.recordStrings])
      assert.equal(checkedWithoutZod(s), true);
    for (const s of [OBJECTS.objectMixed, OBJECTS.objectRefined, LAZY.nestedLazySchema])
      assert.equal(checkedWithoutZod(s), true);
  });
});

/** A random value for `schema`: mostly what it accepts, with wrong types, missing and extra keys mixed in. */
function generate(schema: z.ZodType, rnd: () => number, depth = 0): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const junk = [undefined, null, 0, -1, 1.5, NaN, 2 ** 53, "", "x", "/tmp/a", "😀", true, [], {}, 3n];
  if (rnd() < 0.06 || depth > 8) return pick(junk);
  const def = schema.def as unknown as Record<string, unknown> & { type: string };
  const sub = (s: unknown) => generate(s as z.ZodType, rnd, depth + 1);
  switch (def.type) {
    case "string":
      return pick([
        "",
        "a",
        "relay",
        "Relay_2",
        "/work/x",
        "C:\\x",
        "😀",
        "a".repeat(70),
        "id-1",
        "a1",
        "http://127.0.0.1:8080/v1",
        "https://example.com",
        "ftp://example.com",
        "http://",
      ]);
    case "number":
      return pick([0, 1, 2, 7, 30, 1000, 10_000, -3, 0.5, 2 ** 31, Number.MAX_SAFE_INTEGER]);
    case "bigint":
      return pick([0n, 1n, 2n ** 64n]);
    case "boolean":
      return rnd() < 0.5;
    case "literal":
      return pick(def.values as unknown[]);
    case "enum":
      return pick(Object.values(def.entries as Record<string, unknown>));
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

/** Every schema src/ registers for a generated check (every wire method and notification, the model's events, the tool arguments, the rollout lines, ...), once. */
function checkedSchemas(): Array<[string, z.ZodType]> {
  const seen = new Set<z.ZodType>();
  const found: Array<[string, z.ZodType]> = [];
  for (const owner of OWNERS.filter((o) => o.file.startsWith("src/")))
    for (const [name, schema] of Object.entries(owner.schemas)) {
      if (seen.has(schema)) continue;
      seen.add(schema);
      found.push([`${owner.file} ${name}`, schema]);
    }
  return found;
}

describe("fastParse: generated values for every schema src/ checks", () => {
  const schemas = checkedSchemas();

  test("the wire methods are all among them", () => {
    const all = new Set(schemas.map(([, s]) => s));
    for (const spec of [
      codemode.CodeModeMethods.execute,
      codemode.CodeModeMethods.wait,
      executor.ExecutorMethods.exec,
      executor.ExecutorMethods.write,
    ]) {
      assert.ok(all.has(spec.params), `${spec.name} params not found`);
      assert.ok(all.has(spec.result), `${spec.name} result not found`);
    }
    assert.ok(schemas.length > 60, `only ${schemas.length} schemas found`);
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
      codemode.CodeModeMethods.wait,
      executor.ExecutorMethods.exec,
      executor.ExecutorMethods.write,
    ]) {
      assert.ok(checkedWithoutZod(spec.params), `${spec.name} params ask zod`);
      assert.ok(checkedWithoutZod(spec.result), `${spec.name} result asks zod`);
    }
    for (const schema of [StreamEventSchema, ResponseItemSchema, ExecCommandArgsSchema])
      assert.ok(checkedWithoutZod(schema));
    assert.equal(checkedWithoutZod(z.email()), false);
  });
});
