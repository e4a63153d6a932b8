/**
 * What the validator generator reads of a zod schema, through zod's public API only: each
 * node's `def` (its type, shape, options, element, inner type, checks, default), the exported
 * classes (`instanceof z.ZodCustom`, `z.core.$ZodCheckMinLength`, ...), and a check's bound as
 * the public getters or `z.toJSONSchema` report it for a schema holding that check alone.
 * Every function answers undefined where it cannot tell for sure: the node is then left to zod.
 *
 * One thing the public API does not show is a `when` given to a built-in check (`.min(1, {
 * when })`): such a check would be generated as if it always ran. Relay's schemas give none.
 */
import { z } from "zod";
import * as predicates from "../../src/util/predicates.ts";

/** A node's definition as the generator reads it (the fields vary with `type`). */
export type Def = { type: string } & Record<string, unknown>;

export const defOf = (schema: z.ZodType): Def => schema.def as unknown as Def;

/** How a node treats absence inside an object, as zod's object parse does (its `optin`/`optout`). */
export interface Presence {
  /** undefined: the key is required; "optional": absence allowed; "defaulted": absence filled in. */
  optin: "optional" | "defaulted" | undefined;
  /** "optional": the output may lack the key. */
  optout: "optional" | undefined;
}

/** zod's rules for optin/optout, node type by node type (zod/v4/core/schemas.js). */
export function presence(schema: z.ZodType): Presence {
  const def = defOf(schema);
  const inner = () => presence(def.innerType as z.ZodType);
  switch (def.type) {
    case "optional":
      return { optin: inner().optin === "defaulted" ? "defaulted" : "optional", optout: "optional" };
    case "default":
    case "prefault":
      return { optin: "defaulted", optout: undefined };
    case "nullable":
    case "readonly":
      return inner();
    case "catch":
      return { optin: inner().optin === "defaulted" ? "defaulted" : "optional", optout: inner().optout };
    case "transform":
      return { optin: "optional", optout: undefined };
    case "pipe":
      return { optin: presence(def.in as z.ZodType).optin, optout: presence(def.out as z.ZodType).optout };
    case "lazy":
      return presence((def.getter as () => z.ZodType)());
    case "union": {
      const all = (def.options as z.ZodType[]).map(presence);
      const optin = all.some((p) => p.optin === "defaulted")
        ? "defaulted"
        : all.some((p) => p.optin !== undefined)
          ? "optional"
          : undefined;
      return { optin, optout: all.some((p) => p.optout === "optional") ? "optional" : undefined };
    }
    default:
      return { optin: undefined, optout: undefined };
  }
}

/** A node with no checks of its own and no coercion or format: its type alone decides. */
export function isBare(schema: z.ZodType): boolean {
  const def = defOf(schema);
  return ((def.checks as unknown[] | undefined)?.length ?? 0) === 0 && !def.coerce && def.check === undefined;
}

/** The values a literal or enum accepts; undefined for any other node, or values `===` would not match as zod does. */
export function acceptedValues(schema: z.ZodType): unknown[] | undefined {
  const def = defOf(schema);
  let values: unknown[];
  if (def.type === "literal") values = def.values as unknown[];
  else if (def.type === "enum") {
    values = Object.values(def.entries as Record<string, unknown>);
    // A TypeScript numeric enum carries reverse mappings that zod leaves out.
    if (values.some((v) => typeof v === "number")) return undefined;
  } else return undefined;
  return values.every((v) => literalSource(v) !== undefined) ? values : undefined;
}

/** A primitive as JavaScript source that `===` matches as zod's Set lookup does; undefined for NaN, infinities, symbols. */
export function literalSource(v: unknown): string | undefined {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return Number.isFinite(v) ? String(v) : undefined;
    case "bigint":
      return `${v}n`;
    case "boolean":
      return String(v);
    case "undefined":
      return "undefined";
    default:
      return undefined;
  }
}

/**
 * A default's value as a JavaScript expression that builds it afresh each time (zod hands out
 * a copy too): primitives, arrays and plain objects of them. Undefined for anything else, or a
 * default computed anew on each read (two reads that differ).
 */
export function defaultSource(def: Def): string | undefined {
  const first = valueSource(def.defaultValue);
  return first !== undefined && first === valueSource(def.defaultValue) ? first : undefined;
}

/** An object literal's key for `k`: unquoted where it can be, as Biome writes it (never `__proto__`, which sets the prototype). */
export const keySource = (k: string): string => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : JSON.stringify(k));

function valueSource(v: unknown): string | undefined {
  if (Array.isArray(v)) {
    const items = v.map(valueSource);
    return items.every((s) => s !== undefined) ? `[${items.join(", ")}]` : undefined;
  }
  if (typeof v === "object" && v !== null) {
    if (Object.getPrototypeOf(v) !== Object.prototype || Object.getOwnPropertySymbols(v).length > 0) return undefined;
    const entries = Object.entries(v).map(([k, x]) => (k === "__proto__" ? undefined : [keySource(k), valueSource(x)]));
    if (entries.some((e) => e === undefined || e[1] === undefined)) return undefined;
    return `{ ${entries.map((e) => `${e![0]}: ${e![1]}`).join(", ")} }`;
  }
  return literalSource(v);
}

/** One check of a node (`.min()`, `.int()`, `.refine()`, ...), as the generator understands it. */
export type CheckFact =
  | { kind: "min_length" | "max_length"; bound: number }
  | { kind: "at_least" | "above" | "at_most" | "below"; bound: number | bigint }
  | { kind: "integer"; min: number; max: number }
  | { kind: "refine" }
  /** A refinement by a function of src/util/predicates.ts, called there by name. */
  | { kind: "predicate"; name: string }
  /** A regular expression the string must match; only flags under which `test` keeps no state. */
  | { kind: "regex"; source: string; flags: string };

/** The functions of src/util/predicates.ts, by identity. */
const PREDICATE_NAMES = new Map<unknown, string>(Object.entries(predicates).map(([name, fn]) => [fn, name]));

/** The names a generated module may import from src/util/predicates.ts. */
export const PREDICATES = [...PREDICATE_NAMES.values()];

const INT_RANGES: Record<string, [number, number]> = {
  safeint: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
};

/** What `check`, one of the checks of a node of type `type`, asks; undefined for a kind the generator does not know. */
export function checkFact(check: unknown, type: string): CheckFact | undefined {
  if (check instanceof z.ZodCustom) {
    const def = defOf(check);
    if (def.when !== undefined || typeof def.fn !== "function") return undefined;
    const name = PREDICATE_NAMES.get(def.fn);
    return name === undefined ? { kind: "refine" } : { kind: "predicate", name };
  }
  if (check instanceof z.core.$ZodCheckRegex) {
    // Read through the check's own definition: zod's public getters do not show a pattern's flags.
    const def = check._zod.def;
    const { source, flags } = def.pattern;
    return def.when === undefined && !/[gy]/.test(flags) ? { kind: "regex", source, flags } : undefined;
  }
  if (check instanceof z.ZodNumberFormat) {
    const def = defOf(check);
    const range = INT_RANGES[def.format as string];
    return range && def.when === undefined ? { kind: "integer", min: range[0], max: range[1] } : undefined;
  }
  if (check instanceof z.core.$ZodCheckMinLength)
    return { kind: "min_length", bound: z.string().check(check as z.core.$ZodCheck<string>).minLength! };
  if (check instanceof z.core.$ZodCheckMaxLength)
    return { kind: "max_length", bound: z.string().check(check as z.core.$ZodCheck<string>).maxLength! };
  if (check instanceof z.core.$ZodCheckGreaterThan || check instanceof z.core.$ZodCheckLessThan)
    return type === "bigint" ? bigintBound(check) : numberBound(check);
  return undefined;
}

/** A number comparison's bound and whether it is inclusive, as JSON Schema states them. */
function numberBound(check: unknown): CheckFact | undefined {
  const json = z.toJSONSchema(z.number().check(check as z.core.$ZodCheck<number>)) as Record<string, unknown>;
  const pick = (key: string) => (typeof json[key] === "number" ? (json[key] as number) : undefined);
  const [atLeast, above, atMost, below] = ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"].map(pick);
  if (atLeast !== undefined) return { kind: "at_least", bound: atLeast };
  if (above !== undefined) return { kind: "above", bound: above };
  if (atMost !== undefined) return { kind: "at_most", bound: atMost };
  if (below !== undefined) return { kind: "below", bound: below };
  return undefined;
}

/** A bigint comparison: the public getters show inclusive bounds only; an exclusive one is left to zod. */
function bigintBound(check: unknown): CheckFact | undefined {
  const s = z.bigint().check(check as z.core.$ZodCheck<bigint>);
  if (typeof s.minValue === "bigint") return { kind: "at_least", bound: s.minValue };
  if (typeof s.maxValue === "bigint") return { kind: "at_most", bound: s.maxValue };
  return undefined;
}
