/**
 * zod parses on the hot path (every frame a relay peer reads, the model's stream events, a tool
 * call's arguments), compiled. On its first use here a schema is turned into the source of one
 * function that accepts exactly what the schema accepts and builds the same output (defaults
 * filled in, unknown keys stripped or kept as the schema says, key order kept). The source is
 * made from the schema's definition alone; what a message holds is only ever data to it. A node
 * the compiler does not know (transforms, pipes, string formats, lazy schemas, custom `when`s)
 * is a call into zod for that node, and any value the compiled check refuses is parsed again by
 * zod, so every refusal carries zod's own message.
 *
 * Why: a relay process waits between messages (for the model, for a command), and then zod's
 * generic parse runs cold: a code-mode `execute` answer took 40–100 µs to check after an idle of
 * 2 ms, the compiled check 13–31 µs, in each of the two processes, on every call
 * (docs/performance.md). The schemas stay the one definition; test/util/fast-parse.test.ts
 * compares the two on generated values of every wire method, so a zod upgrade that changes a
 * rule fails there.
 */
import type { z } from "zod";

const FAIL: unique symbol = Symbol("refused");
/** A node's check: the parsed value, or FAIL exactly where zod reports an issue. */
type Check = (value: unknown) => unknown;

/** The parts of zod's internals the compiler reads (`schema._zod`). */
interface ZodInternals {
  def: Record<string, unknown> & { type: string; checks?: Array<{ _zod: ZodInternals }> };
  traits: Set<string>;
  optin?: "optional" | "defaulted";
  optout?: "optional";
  values?: Set<unknown>;
  propValues?: Record<string, Set<unknown>>;
}

const internals = (schema: unknown): ZodInternals => (schema as { _zod: ZodInternals })._zod;

const compiled = new WeakMap<object, Check>();
const compiling = new Set<object>();

/** `schema.safeParse(value)`, through the compiled check where it accepts. */
export function fastParse<T extends z.ZodType>(schema: T, value: unknown): z.ZodSafeParseResult<z.output<T>> {
  const out = (compiled.get(schema) ?? checkFor(schema))(value);
  return out === FAIL ? schema.safeParse(value) : { success: true, data: out as z.output<T> };
}

/** Whether `schema`'s compiled check decides every value without asking zod (for tests of the hot messages). */
export function compiledWithoutZod(schema: z.ZodType): boolean {
  checkFor(schema);
  return withoutZod.get(schema) === true;
}

/** Per compiled schema: no node of its tree asks zod. */
const withoutZod = new WeakMap<object, boolean>();
/** One frame per schema being compiled, cleared when any node below it asks zod. */
const open: Array<{ withoutZod: boolean }> = [];

function checkFor(schema: z.ZodType): Check {
  let check = compiled.get(schema);
  if (check === undefined) {
    const frame = { withoutZod: true };
    open.push(frame);
    try {
      check = compile(schema);
    } finally {
      open.pop();
    }
    compiled.set(schema, check);
    withoutZod.set(schema, frame.withoutZod);
  }
  if (!withoutZod.get(schema)) for (const f of open) f.withoutZod = false;
  return check;
}

/**
 * A schema's check, generated as the source of one function: a whole message is checked without
 * a call per field (each call into code that has gone cold costs about a microsecond). Unions are
 * the exception: each option is a check of its own, tried in turn. A schema that refers back to
 * one still being compiled (recursion) asks zod.
 */
function compile(schema: z.ZodType): Check {
  if (compiling.has(schema)) return viaZod(schema);
  compiling.add(schema);
  try {
    const e = new Emitter();
    const out = e.node(schema, "v");
    const body = `"use strict"; return function check(v) {\n${e.lines.join("\n")}\nreturn ${out};\n};`;
    return new Function("r", "F", body)(e.refs, FAIL) as Check;
  } finally {
    compiling.delete(schema);
  }
}

function viaZod(schema: z.ZodType): Check {
  for (const f of open) f.withoutZod = false;
  return (value) => {
    const r = schema.safeParse(value);
    return r.success ? r.data : FAIL;
  };
}

/** Builds a check's source: statements that end in `fail` where zod reports an issue. */
class Emitter {
  readonly lines: string[] = [];
  /** What a refused value runs: the check returns F, or a union leaves the option being tried. */
  fail = "return F";
  /** The schemas being emitted, outermost first. */
  private readonly open = new Set<z.ZodType>();
  readonly refs: unknown[] = [];
  private vars = 0;

  /** A constant the code reads as r[i]. */
  ref(value: unknown): string {
    this.refs.push(value);
    return `r[${this.refs.length - 1}]`;
  }

  fresh(): string {
    return `t${this.vars++}`;
  }

  line(code: string): void {
    this.lines.push(code);
  }

  /** Emits the check of `schema` on the variable `input`; returns the expression of its output. */
  node(schema: z.ZodType, input: string): string {
    // A schema inside itself (a getter in a shape, say) would be emitted for ever: zod checks it.
    if (this.open.has(schema)) return this.call(viaZod(schema), input);
    this.open.add(schema);
    try {
      return this.nodeOnce(schema, input);
    } finally {
      this.open.delete(schema);
    }
  }

  private nodeOnce(schema: z.ZodType, input: string): string {
    const zod = internals(schema);
    const predicates = (zod.def.checks ?? []).map((c) => predicateSource(c._zod.def, this));
    if (zod.traits.has("$ZodCheck") || zod.def.coerce || predicates.some((p) => p === undefined))
      return this.call(viaZod(schema), input);
    const out = emitType(this, schema, zod, input);
    if (out === undefined) return this.call(viaZod(schema), input);
    for (const p of predicates) this.line(`if (!(${p!(out)})) ${this.fail};`);
    return out;
  }

  /** Emits a call of a separate check on `input`; returns the variable holding its output. */
  call(check: Check, input: string): string {
    const t = this.fresh();
    this.line(`const ${t} = ${this.ref(check)}(${input}); if (${t} === F) ${this.fail};`);
    return t;
  }
}

const OBJECT_TEST = (x: string) => `typeof ${x} !== "object" || ${x} === null || Array.isArray(${x})`;

/** Emits the check for one node's own type; undefined when zod must decide it. */
function emitType(e: Emitter, _schema: z.ZodType, zod: ZodInternals, x: string): string | undefined {
  const def = zod.def;
  const primitive: Record<string, string> = {
    string: `typeof ${x} !== "string"`,
    number: `typeof ${x} !== "number" || !Number.isFinite(${x})`,
    boolean: `typeof ${x} !== "boolean"`,
    bigint: `typeof ${x} !== "bigint"`,
    null: `${x} !== null`,
  };
  if (def.type in primitive) {
    e.line(`if (${primitive[def.type]}) ${e.fail};`);
    return x;
  }
  switch (def.type) {
    case "unknown":
    case "any":
      return x;
    case "literal":
    case "enum":
      if (zod.values === undefined) return undefined;
      e.line(`if (!${e.ref(zod.values)}.has(${x})) ${e.fail};`);
      return x;
    case "optional":
    case "nullable":
    case "default":
      return emitWrapper(e, zod, x);
    case "array":
      return emitArray(e, def.element as z.ZodType, x);
    case "object":
      return emitObject(e, def, x);
    case "union":
      return emitUnion(e, zod, x);
    case "record":
      return emitRecord(e, def, x);
    default:
      return undefined;
  }
}

/**
 * A record with plain string keys: a plain object's own enumerable keys, each value checked
 * (`__proto__` left out, as zod does). An object with symbol keys or its own `constructor`
 * (which zod's plain-object test reads) is left to zod.
 */
function emitRecord(e: Emitter, def: ZodInternals["def"], x: string): string | undefined {
  const key = internals(def.keyType);
  if (key.def.type !== "string" || key.def.coerce || (key.def.checks?.length ?? 0) > 0 || key.traits.has("$ZodCheck"))
    return undefined;
  const [out, proto, k, item] = [e.fresh(), e.fresh(), e.fresh(), e.fresh()];
  e.line(`if (${OBJECT_TEST(x)}) ${e.fail}; const ${proto} = Object.getPrototypeOf(${x});`);
  e.line(
    `if ((${proto} !== Object.prototype && ${proto} !== null) || Object.hasOwn(${x}, "constructor") || Object.getOwnPropertySymbols(${x}).length > 0) ${e.fail};`,
  );
  e.line(
    `const ${out} = {}; for (const ${k} of Object.keys(${x})) { if (${k} === "__proto__") continue; const ${item} = ${x}[${k}];`,
  );
  e.line(`${out}[${k}] = ${e.node(def.valueType as z.ZodType, item)}; }`);
  return out;
}

/** optional, nullable, default: the inner check in a branch, its output in a `let`. */
function emitWrapper(e: Emitter, zod: ZodInternals, x: string): string | undefined {
  const def = zod.def;
  const innerType = def.innerType as z.ZodType;
  if (def.type === "optional" && zod.traits.has("$ZodExactOptional")) return e.node(innerType, x);
  // An optional around a default hands absence to the default: rare enough to leave to zod.
  if (def.type === "optional" && internals(innerType).optin === "defaulted") return undefined;
  const t = e.fresh();
  const fallback = def.type === "default" ? defaultSource(e, def.defaultValue) : undefined;
  const empty = def.type === "nullable" ? "null" : "undefined";
  e.line(`let ${t}; if (${x} === ${fallback === undefined ? empty : "undefined"}) ${t} = ${fallback ?? empty}; else {`);
  const inner = e.node(innerType, x);
  e.line(fallback === undefined ? `${t} = ${inner}; }` : `${t} = ${inner} === undefined ? ${fallback} : ${inner}; }`);
  return t;
}

/**
 * A default's value, as zod hands it out: a shallow copy of an array or plain object (zod's
 * getter copies on every read), anything else as it is. Relay's defaults are values, read once
 * here; a default computed by a function on every use would be frozen at its first value.
 */
function defaultSource(e: Emitter, value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? "[]" : `[...${e.ref(value)}]`;
  const proto: unknown = typeof value === "object" && value !== null ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || (proto === null && value !== null && typeof value === "object"))
    return `{ ...${e.ref(value)} }`;
  return e.ref(value);
}

function emitArray(e: Emitter, element: z.ZodType, x: string): string {
  const [out, i, item] = [e.fresh(), e.fresh(), e.fresh()];
  e.line(`if (!Array.isArray(${x})) ${e.fail}; const ${out} = new Array(${x}.length);`);
  e.line(`for (let ${i} = 0; ${i} < ${x}.length; ${i}++) { const ${item} = ${x}[${i}];`);
  e.line(`${out}[${i}] = ${e.node(element, item)}; }`);
  return out;
}

/**
 * An object: unknown keys stripped, refused (strict) or kept as they are (loose, passthrough:
 * after the shape's keys, in `for...in` order, `__proto__` left out, as zod does); a catchall
 * that checks the unknown keys is left to zod.
 */
function emitObject(e: Emitter, def: ZodInternals["def"], x: string): string | undefined {
  const catchall = def.catchall === undefined ? undefined : internals(def.catchall).def.type;
  if (catchall !== undefined && catchall !== "never" && catchall !== "unknown" && catchall !== "any") return undefined;
  const shape = def.shape as Record<string, z.ZodType>;
  if (Object.getOwnPropertySymbols(shape).length > 0) return undefined;
  const out = e.fresh();
  e.line(`if (${OBJECT_TEST(x)}) ${e.fail}; const ${out} = {};`);
  for (const key of Object.keys(shape)) if (key !== "__proto__") emitField(e, shape[key]!, key, x, out);
  const known = e.ref(new Set(Object.keys(shape)));
  if (catchall === "never") e.line(`for (const k in ${x}) if (!${known}.has(k)) ${e.fail};`);
  else if (catchall !== undefined)
    e.line(`for (const k in ${x}) if (!${known}.has(k) && k !== "__proto__") ${out}[k] = ${x}[k];`);
  return out;
}

/**
 * One key, as zod's object parse treats it: a required key must be present; an optional one that
 * is absent is left out; a present one is kept even when its output is undefined. Other mixes of
 * optional input and output go through `putField`.
 */
function emitField(e: Emitter, schema: z.ZodType, key: string, x: string, out: string): void {
  const { optin, optout } = internals(schema);
  const k = JSON.stringify(key);
  const value = e.fresh();
  if (optin === undefined) {
    e.line(`if (!(${k} in ${x})) ${e.fail}; const ${value} = ${x}[${k}];`);
    e.line(`${out}[${k}] = ${e.node(schema, value)};`);
  } else if (optin === "optional" && optout === "optional") {
    e.line(`if (${k} in ${x}) { const ${value} = ${x}[${k}];`);
    e.line(`${out}[${k}] = ${e.node(schema, value)}; }`);
  } else if (optin === "defaulted" && optout === undefined) {
    e.line(`const ${value} = ${x}[${k}];`);
    e.line(`${out}[${k}] = ${e.node(schema, value)};`);
  } else {
    const field = { key, check: checkFor(schema), optin, optout };
    e.line(`if (!${e.ref(putField)}(${out}, ${x}, ${e.ref(field)})) ${e.fail};`);
  }
}

interface Field {
  key: string;
  check: Check;
  optin: ZodInternals["optin"];
  optout: ZodInternals["optout"];
}

/** One key with any mix of optional input and output, as zod's object parse treats it; false where zod reports an issue. */
function putField(out: Record<string, unknown>, input: Record<string, unknown>, f: Field): boolean {
  const present = f.key in input;
  if (!present && f.optout === "optional" && f.optin === "optional") return true;
  if (!present && f.optin === undefined) return false;
  const value = f.check(input[f.key]);
  if (value === FAIL) return !present && f.optin !== undefined && f.optout === "optional";
  if (value !== undefined) out[f.key] = value;
  else if (present || (f.optin === "defaulted" && f.optout !== "optional")) out[f.key] = undefined;
  return true;
}

/**
 * A union: the first option that accepts, each tried in a labelled block that a refusal leaves;
 * an object option whose required keys are not all there is skipped without a try. A
 * discriminated union tries only the option its tag names, as zod does.
 */
function emitUnion(e: Emitter, zod: ZodInternals, x: string): string | undefined {
  const def = zod.def;
  const discriminated = zod.traits.has("$ZodDiscriminatedUnion");
  if (zod.traits.has("$ZodXor") || (def.inclusive === false && !discriminated) || def.unionFallback) return undefined;
  const options = def.options as z.ZodType[];
  const guards = discriminated
    ? tagGuards(e, options, def.discriminator as string, x)
    : options.map((o) => requiredKeysGuard(o, x));
  if (guards === undefined) return undefined;
  const out = e.fresh();
  e.line(`let ${out} = F;`);
  options.forEach((option, i) => {
    const label = e.fresh();
    e.line(`if (${out} === F${guards[i] ? ` && ${guards[i]}` : ""}) ${label}: {`);
    const outer = e.fail;
    e.fail = `break ${label}`;
    const value = e.node(option, x);
    e.fail = outer;
    e.line(`${out} = ${value}; }`);
  });
  e.line(`if (${out} === F) ${e.fail};`);
  return out;
}

/** For an object option: its required keys are all in `x` (else it refuses for sure). */
function requiredKeysGuard(option: z.ZodType, x: string): string | undefined {
  const def = internals(option).def;
  if (def.type !== "object" || (def.checks?.length ?? 0) > 0) return undefined;
  const shape = def.shape as Record<string, z.ZodType>;
  const required = Object.keys(shape).filter((k) => k !== "__proto__" && internals(shape[k]).optin === undefined);
  if (required.length === 0) return undefined;
  return `!(${OBJECT_TEST(x)}) && ${required.map((k) => `${JSON.stringify(k)} in ${x}`).join(" && ")}`;
}

/** For a discriminated union: each option's guard is that the tag is one of its values; undefined where zod's lookup could differ. */
function tagGuards(e: Emitter, options: z.ZodType[], tag: string, x: string): string[] | undefined {
  const seen = new Set<unknown>();
  const guards: string[] = [];
  for (const option of options) {
    const values = internals(option).propValues?.[tag];
    if (values === undefined || values.size === 0) return undefined;
    for (const value of values) {
      if (seen.has(value)) return undefined;
      seen.add(value);
    }
    guards.push(`!(${OBJECT_TEST(x)}) && ${e.ref(values)}.has(${x}[${JSON.stringify(tag)}])`);
  }
  return guards;
}

const isNumeric = (v: unknown) => typeof v === "number" || typeof v === "bigint";

const INT_RANGES: Record<string, [number, number]> = {
  safeint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
};

/** The source of what a check (`.min`, `.int`, ...) accepts, for the kinds relay's schemas use; undefined for any other. */
function predicateSource(def: Record<string, unknown>, e: Emitter): ((x: string) => string) | undefined {
  const when = def.when !== undefined;
  switch (def.check) {
    // The units decide a length far enough from the bound; only near it are code points counted.
    // zod gives length checks a `when` of its own (run on anything with a length), which holds
    // for the strings and arrays these are attached to.
    case "min_length": {
      const min = def.minimum as number;
      return (x) =>
        `${x}.length >= ${2 * min + 1} || (${x}.length >= ${min} && ${e.ref(lengthOf)}(${x}, ${min}) >= ${min})`;
    }
    case "max_length": {
      const max = def.maximum as number;
      return (x) => `${x}.length < ${max} || (${x}.length <= ${2 * max} && ${e.ref(lengthOf)}(${x}, ${max}) <= ${max})`;
    }
    case "greater_than":
      if (when || !isNumeric(def.value)) return undefined;
      return (x) => `${x} ${def.inclusive ? ">=" : ">"} ${e.ref(def.value)}`;
    case "less_than":
      if (when || !isNumeric(def.value)) return undefined;
      return (x) => `${x} ${def.inclusive ? "<=" : "<"} ${e.ref(def.value)}`;
    case "number_format": {
      const range = INT_RANGES[def.format as string];
      if (when || range === undefined) return undefined;
      return (x) => `Number.isInteger(${x}) && ${x} >= ${range[0]} && ${x} <= ${range[1]}`;
    }
    case "string_format":
      if (def.format !== "starts_with" || when) return undefined;
      return (x) => `${x}.startsWith(${e.ref(def.prefix)})`;
    case "custom": {
      if (when) return undefined;
      const refine = def.fn as (v: unknown) => unknown;
      // An asynchronous refinement fails a synchronous zod parse; zod says so.
      const holds = (v: unknown) => {
        const r = refine(v);
        return !(r instanceof Promise) && Boolean(r);
      };
      return (x) => `${e.ref(holds)}(${x})`;
    }
    default:
      return undefined;
  }
}

/**
 * A length as zod's length checks count it: an array's items, a string's code points (a pair of
 * surrogates is one). Counting is needed only near `bound`: below it in units, or at twice it, the
 * units decide.
 */
function lengthOf(v: unknown, bound: number): number {
  const units = (v as { length: number }).length;
  if (typeof v !== "string" || units < bound || units >= bound * 2 + 1) return units;
  let count = units;
  for (let i = 0; i < units - 1; i++) {
    if ((v.charCodeAt(i) & 0xfc00) === 0xd800 && (v.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      count--;
      i++;
    }
  }
  return count;
}
