/**
 * The state of one check function being written (its lines, variable names, the constants and
 * helpers it uses) and the small pieces of source every kind of node needs. What each node
 * becomes is in emit-nodes.ts.
 */

import { PREDICATES } from "./zod-read.ts";

/** Steps from the root schema to a node, as util/fast-parse.ts's zodPart takes them. */
export type Path = ReadonlyArray<string | number>;

/** Names a variable may not take: keywords, and the global object's (which Biome's noShadowRestrictedNames refuses). */
const RESERVED = new Set(
  [
    "break case catch class const continue debugger default delete do else enum export extends false finally for",
    "function if import in instanceof new null return super switch this throw true try typeof var void while with",
    "yield let static implements interface package private protected public await arguments eval undefined NaN",
    "Infinity globalThis isFinite isNaN parseFloat parseInt decodeURI decodeURIComponent encodeURI",
    "encodeURIComponent escape unescape Object Function Boolean Symbol Error AggregateError EvalError RangeError",
    "ReferenceError SyntaxError TypeError URIError Number BigInt Math Date String RegExp Array Int8Array Uint8Array",
    "Uint8ClampedArray Int16Array Uint16Array Int32Array Uint32Array Float32Array Float64Array BigInt64Array",
    "BigUint64Array Map Set WeakMap WeakSet WeakRef FinalizationRegistry ArrayBuffer SharedArrayBuffer Atomics",
    "DataView JSON Promise Reflect Proxy Intl constructor hasOwnProperty isPrototypeOf propertyIsEnumerable",
    "toLocaleString toString valueOf __proto__ __defineGetter__ __defineSetter__ __lookupGetter__ __lookupSetter__",
  ]
    .join(" ")
    .split(" "),
);

/** Names the generated code imports or declares itself. */
const TAKEN = [
  "FAIL",
  "Obj",
  "Schema",
  "viaZod",
  "zodPart",
  "refinementHolds",
  "codePoints",
  "value",
  "schema",
  ...PREDICATES,
];

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `obj.key`, or `obj["key"]` where the key is not an identifier. */
export const member = (obj: string, key: string) =>
  IDENTIFIER.test(key) ? `${obj}.${key}` : `${obj}[${JSON.stringify(key)}]`;

/** The condition under which `x` is not what zod takes for an object. */
export const notObject = (x: string) => `typeof ${x} !== "object" || ${x} === null || Array.isArray(${x})`;

/** The condition under which `x` is what zod takes for an object. */
export const isObject = (x: string) => `typeof ${x} === "object" && ${x} !== null && !Array.isArray(${x})`;

/** A check of the same file that a node calls instead of being written out again. */
export interface SharedCheck {
  name: string;
  readsSchema: boolean;
  asksZod: boolean;
}

export class Emitter {
  lines: string[] = [];
  /** Module-level constants the function reads. */
  readonly constants: string[] = [];
  /** Each constant's name by its source, so a value used twice is declared once. */
  private readonly constantNames = new Map<string, string>();
  /** Helpers of util/fast-parse.ts the function calls. */
  readonly helpers = new Set<string>();
  /** Whether the function reads its `schema` argument. */
  readsSchema = false;
  /** Whether some node is left to zod. */
  asksZod = false;
  /** Whether the function uses labelled blocks (a union's options). */
  labels = false;
  /** What a refusal runs: the function returns FAIL, or a block (a union's option) is left. */
  fail = "return FAIL";
  /** The definitions being written, outermost first: one met again is a schema inside itself. */
  readonly open = new Set<object>();
  private readonly names = new Set<string>(TAKEN);

  constructor(
    readonly fnName: string,
    /** The check of this file for a node's definition, if the owner registered that schema too. */
    readonly shared: (def: object) => SharedCheck | undefined = () => undefined,
  ) {}

  line(code: string): void {
    this.lines.push(code);
  }

  /** A fresh variable name made from `hint` (a key, say). */
  name(hint: string): string {
    let base = hint.replace(/[^A-Za-z0-9_$]/g, "_");
    if (!/^[A-Za-z_$]/.test(base)) base = `_${base}`;
    if (RESERVED.has(base)) base = `${base}_`;
    let name = base;
    for (let i = 2; this.names.has(name); i++) name = `${base}_${i}`;
    this.names.add(name);
    return name;
  }

  /** A module-level constant for this function, named after it and `hint`; one per source. */
  constant(hint: string, source: string): string {
    const known = this.constantNames.get(source);
    if (known !== undefined) return known;
    const name = this.name(`${this.fnName}_${hint}`);
    this.constants.push(`const ${name} = ${source};`);
    this.constantNames.set(source, name);
    return name;
  }

  /** Runs `body` with what it emits set aside; returns those lines and `body`'s result. */
  capture<T>(body: () => T): { lines: string[]; result: T } {
    const outer = this.lines;
    this.lines = [];
    try {
      const result = body();
      return { lines: this.lines, result };
    } finally {
      this.lines = outer;
    }
  }

  /** Runs `body` with refusals leaving the block labelled `label` instead. */
  refusingTo<T>(label: string, body: () => T): T {
    const outer = this.fail;
    this.fail = `break ${label}`;
    this.labels = true;
    try {
      return body();
    } finally {
      this.fail = outer;
    }
  }

  /** Emits a call into zod for the node at `path`; returns the variable holding its output. */
  viaZod(x: string, path: Path, why: string): string {
    this.asksZod = true;
    this.helpers.add("viaZod");
    const out = this.name(`${x}_zod`);
    this.line(`// ${why}: zod decides`);
    this.line(`const ${out} = viaZod(${this.part(path)}, ${x});`);
    this.line(`if (${out} === FAIL) ${this.fail};`);
    return out;
  }

  /** The source that reaches the node at `path` from the `schema` argument. */
  part(path: Path): string {
    this.readsSchema = true;
    if (path.length === 0) return "schema";
    this.helpers.add("zodPart");
    return `zodPart(schema, ${path.map((s) => JSON.stringify(s)).join(", ")})`;
  }
}
