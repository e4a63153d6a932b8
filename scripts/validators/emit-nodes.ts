/**
 * What each kind of zod node becomes in a generated check: statements that refuse (`e.fail`)
 * exactly where zod reports an issue, and the expression of the node's output. Objects, arrays,
 * records with string keys, unions (in order, or by their tag), literals, enums, optional,
 * nullable and default wrappers, and length, range, integer, regex and refinement checks are
 * written out (a refinement by a function of src/util/predicates.ts as a call of it by name);
 * any other node (pipes, transforms, string formats, lazy schemas, a schema inside itself) is a
 * call into zod for that node. Refusing more than zod would is always safe (fastParse then
 * asks zod); accepting more, or building another output, is what test/util/fast-parse.test.ts
 * looks for.
 */
import { z } from "zod";
import { type Emitter, isObject, member, notObject, type Path, type SharedCheck } from "./emitter.ts";
import {
  acceptedValues,
  type CheckFact,
  checkFact,
  type Def,
  defaultSource,
  defOf,
  isBare,
  literalSource,
  presence,
} from "./zod-read.ts";

/** Node types whose output is never undefined. */
const DEFINED = new Set(["string", "number", "boolean", "bigint", "null", "object", "array", "record", "enum"]);

const PRIMITIVE: Record<string, (x: string) => string> = {
  string: (x) => `typeof ${x} !== "string"`,
  number: (x) => `typeof ${x} !== "number" || !Number.isFinite(${x})`,
  boolean: (x) => `typeof ${x} !== "boolean"`,
  bigint: (x) => `typeof ${x} !== "bigint"`,
  null: (x) => `${x} !== null`,
  undefined: (x) => `${x} !== undefined`,
};

/** Emits the check of `schema` (at `path` from the root) on the variable `x`; returns the expression of its output. */
export function emitNode(e: Emitter, schema: z.ZodType, x: string, path: Path): string {
  const def = defOf(schema);
  const shared = path.length > 0 ? e.shared(def) : undefined;
  if (shared !== undefined) return callShared(e, shared, x, path);
  // A schema inside itself (a getter in a shape, say) would be written out for ever.
  if (e.open.has(def)) return e.viaZod(x, path, "a schema inside itself");
  e.open.add(def);
  try {
    const facts = ((def.checks as unknown[] | undefined) ?? []).map((c) => checkFact(c, def.type));
    if (def.coerce || def.check !== undefined || facts.some((f) => f === undefined))
      return e.viaZod(x, path, `a check or coercion the generator does not know (${def.type})`);
    const { lines, result: out } = e.capture(() => emitType(e, schema, def, x, path));
    if (out === undefined) return e.viaZod(x, path, `a node the generator leaves to zod (${def.type})`);
    for (const l of lines) e.line(l);
    facts.forEach((f, i) => {
      if (!impliedBy(f!, facts)) e.line(`if (${refusedBy(e, f!, out, def.type, [...path, "checks", i])}) ${e.fail};`);
    });
    return out;
  } finally {
    e.open.delete(def);
  }
}

/** A node whose schema the owner registered too: a call of that schema's check. */
function callShared(e: Emitter, shared: SharedCheck, x: string, path: Path): string {
  if (shared.asksZod) e.asksZod = true;
  const out = e.name(`${x}_checked`);
  e.line(`const ${out} = ${shared.name}(${x}${shared.readsSchema ? `, ${e.part(path)}` : ""});`);
  e.line(`if (${out} === FAIL) ${e.fail};`);
  return out;
}

/** Emits the check of a node's own type; undefined where zod must decide it. */
function emitType(e: Emitter, schema: z.ZodType, def: Def, x: string, path: Path): string | undefined {
  const primitive = PRIMITIVE[def.type];
  if (primitive !== undefined) {
    e.line(`if (${primitive(x)}) ${e.fail};`);
    return x;
  }
  switch (def.type) {
    case "unknown":
    case "any":
      return x;
    case "literal":
    case "enum":
      return emitValues(e, schema, x);
    case "optional":
    case "nullable":
    case "default":
      return emitWrapper(e, schema, def, x, path);
    case "array":
      return emitArray(e, def, x, path);
    case "object":
      return emitObject(e, def, x, path);
    case "record":
      return emitRecord(e, def, x, path);
    case "union":
      return def.discriminator === undefined ? emitUnion(e, def, x, path) : emitTagged(e, def, x, path);
    default:
      return undefined;
  }
}

/** Whether a bound refuses nothing an integer check of the same node lets through (`.int().max(MAX_SAFE_INTEGER)`). */
function impliedBy(f: CheckFact, facts: Array<CheckFact | undefined>): boolean {
  const int = facts.find((g) => g?.kind === "integer") as Extract<CheckFact, { kind: "integer" }> | undefined;
  if (int === undefined || typeof (f as { bound?: unknown }).bound !== "number") return false;
  const b = (f as { bound: number }).bound;
  return (
    (f.kind === "at_least" && b <= int.min) ||
    (f.kind === "above" && b < int.min) ||
    (f.kind === "at_most" && b >= int.max) ||
    (f.kind === "below" && b > int.max)
  );
}

/** The condition under which check `f` refuses the output `x` of a node of type `type`. */
function refusedBy(e: Emitter, f: CheckFact, x: string, type: string, path: Path): string {
  const bound = (n: number | bigint) => (typeof n === "bigint" ? `${n}n` : String(n));
  switch (f.kind) {
    // zod counts a string's code points, but only where its UTF-16 units do not decide.
    case "min_length":
      if (type !== "string" || f.bound <= 1) return `${x}.length < ${f.bound}`;
      e.helpers.add("codePoints");
      return `${x}.length < ${f.bound} || (${x}.length < ${2 * f.bound} && codePoints(${x}) < ${f.bound})`;
    case "max_length":
      if (type !== "string") return `${x}.length > ${f.bound}`;
      e.helpers.add("codePoints");
      return `${x}.length > ${f.bound} && codePoints(${x}) > ${f.bound}`;
    case "at_least":
      return `${x} < ${bound(f.bound)}`;
    case "above":
      return `${x} <= ${bound(f.bound)}`;
    case "at_most":
      return `${x} > ${bound(f.bound)}`;
    case "below":
      return `${x} >= ${bound(f.bound)}`;
    case "integer":
      return `!Number.isInteger(${x}) || ${x} < ${f.min} || ${x} > ${f.max}`;
    case "refine":
      e.helpers.add("refinementHolds");
      return `!refinementHolds(${e.part(path)}, ${x})`;
    case "predicate":
      return `!${f.name}(${x})`;
    case "regex":
      // `source` is a valid literal body (RegExp escapes its slashes), and Biome prefers literals.
      return `!${e.constant("pattern", `/${f.source}/${f.flags}`)}.test(${x})`;
  }
}

/** A literal or an enum: one of its values, compared in place, or looked up in a set when there are many. */
function emitValues(e: Emitter, schema: z.ZodType, x: string): string | undefined {
  const values = acceptedValues(schema);
  if (values === undefined || values.length === 0) return undefined;
  if (values.length <= 4) {
    e.line(`if (${values.map((v) => `${x} !== ${literalSource(v)}`).join(" && ")}) ${e.fail};`);
  } else {
    const set = e.constant("values", `new Set<unknown>([${values.map(literalSource).join(", ")}])`);
    e.line(`if (!${set}.has(${x})) ${e.fail};`);
  }
  return x;
}

/**
 * optional, nullable, default: the inner check in a branch. Where the inner output is its input
 * (a string, say), so is the wrapper's.
 */
function emitWrapper(e: Emitter, schema: z.ZodType, def: Def, x: string, path: Path): string | undefined {
  const inner = def.innerType as z.ZodType;
  const innerPath = [...path, "innerType"];
  if (schema instanceof z.ZodExactOptional) return emitNode(e, inner, x, innerPath);
  // An optional around a default hands absence to the default: rare enough to leave to zod.
  if (def.type === "optional" && presence(inner).optin === "defaulted") return undefined;
  const fallback = def.type === "default" ? defaultSource(def) : undefined;
  if (def.type === "default" && fallback === undefined) return undefined;
  const { lines, result } = e.capture(() => emitNode(e, inner, x, innerPath));
  if (fallback !== undefined) {
    const out = e.name(`${x}_or_default`);
    const value = DEFINED.has(defOf(inner).type) ? result : `${result} === undefined ? ${fallback} : ${result}`;
    e.line(`let ${out}: unknown;`);
    e.line(`if (${x} === undefined) ${out} = ${fallback};`);
    e.line("else {");
    for (const l of lines) e.line(l);
    e.line(`${out} = ${value};`);
    e.line("}");
    return out;
  }
  const empty = def.type === "nullable" ? "null" : "undefined";
  if (result === x) {
    if (lines.length === 0) return x;
    e.line(`if (${x} !== ${empty}) {`);
    for (const l of lines) e.line(l);
    e.line("}");
    return x;
  }
  const out = e.name(`${x}_checked`);
  e.line(`let ${out}: unknown${empty === "null" ? " = null" : ""};`);
  e.line(`if (${x} !== ${empty}) {`);
  for (const l of lines) e.line(l);
  e.line(`${out} = ${result};`);
  e.line("}");
  return out;
}

function emitArray(e: Emitter, def: Def, x: string, path: Path): string {
  const [out, i, item] = [e.name(`${x}_out`), e.name("i"), e.name(`${x}_item`)];
  e.line(`if (!Array.isArray(${x})) ${e.fail};`);
  e.line(`const ${out}: unknown[] = new Array(${x}.length);`);
  e.line(`for (let ${i} = 0; ${i} < ${x}.length; ${i}++) {`);
  e.line(`const ${item}: unknown = ${x}[${i}];`);
  e.line(`${out}[${i}] = ${emitNode(e, def.element as z.ZodType, item, [...path, "element"])};`);
  e.line("}");
  return out;
}

/**
 * An object: the shape's keys in order, then unknown keys stripped, refused (strict) or kept as
 * they are (loose: in `for...in` order, `__proto__` left out, as zod does). A catchall that
 * checks the unknown keys is left to zod.
 */
function emitObject(e: Emitter, def: Def, x: string, path: Path): string | undefined {
  const catchall = def.catchall as z.ZodType | undefined;
  const rest = catchall === undefined ? "strip" : isBare(catchall) ? defOf(catchall).type : "checked";
  if (rest !== "strip" && rest !== "never" && rest !== "unknown" && rest !== "any") return undefined;
  const shape = def.shape as Record<string, z.ZodType>;
  if (Object.getOwnPropertySymbols(shape).length > 0) return undefined;
  const [obj, out] = [e.name(`${x}_obj`), e.name(`${x}_out`)];
  e.line(`if (${notObject(x)}) ${e.fail};`);
  if (Object.keys(shape).some((k) => k !== "__proto__") || rest !== "strip") e.line(`const ${obj} = ${x} as Obj;`);
  e.line(`const ${out}: Obj = {};`);
  for (const key of Object.keys(shape))
    if (key !== "__proto__") emitField(e, shape[key]!, key, obj, out, [...path, "shape", key]);
  if (rest === "strip") return out;
  const keys = Object.keys(shape);
  const k = e.name("key");
  const unknown =
    keys.length === 0
      ? "true"
      : keys.length <= 3
        ? keys.map((known) => `${k} !== ${JSON.stringify(known)}`).join(" && ")
        : `!${e.constant("keys", `new Set([${keys.map((known) => JSON.stringify(known)).join(", ")}])`)}.has(${k})`;
  if (rest === "never") e.line(`for (const ${k} in ${obj}) if (${unknown}) ${e.fail};`);
  else e.line(`for (const ${k} in ${obj}) if (${unknown} && ${k} !== "__proto__") ${out}[${k}] = ${obj}[${k}];`);
  return out;
}

/**
 * One key, as zod's object parse treats it: a required key must be present; an optional one
 * that is absent is left out; a present one is kept even when its output is undefined; a
 * defaulted one is always set. Any other mix of optional input and output is written out in full.
 */
function emitField(e: Emitter, schema: z.ZodType, key: string, obj: string, out: string, path: Path): void {
  const { optin, optout } = presence(schema);
  const k = JSON.stringify(key);
  const v = e.name(key);
  if (optin === undefined && optout === undefined) {
    e.line(`if (!(${k} in ${obj})) ${e.fail};`);
    e.line(`const ${v} = ${member(obj, key)};`);
    e.line(`${member(out, key)} = ${emitNode(e, schema, v, path)};`);
  } else if (optin === "optional" && optout === "optional") {
    e.line(`if (${k} in ${obj}) {`);
    e.line(`const ${v} = ${member(obj, key)};`);
    e.line(`${member(out, key)} = ${emitNode(e, schema, v, path)};`);
    e.line("}");
  } else if (optin === "defaulted" && optout === undefined) {
    e.line(`const ${v} = ${member(obj, key)};`);
    e.line(`${member(out, key)} = ${emitNode(e, schema, v, path)};`);
  } else {
    const [present, result, label] = [e.name(`has_${key}`), e.name(`${key}_result`), e.name(`${key}_check`)];
    e.line(`const ${present} = ${k} in ${obj};`);
    if (optin === undefined) e.line(`if (!${present}) ${e.fail};`);
    e.line(`const ${v} = ${member(obj, key)};`);
    e.line(`let ${result}: unknown = FAIL;`);
    e.line(`${label}: {`);
    const value = e.refusingTo(label, () => emitNode(e, schema, v, path));
    e.line(`${result} = ${value};`);
    e.line("}");
    // A refusal counts unless the key is absent and may be (zod drops an absent optional's issues).
    const tolerated = optin !== undefined && optout === "optional";
    const kept = optin === "defaulted" && optout !== "optional" ? "true" : `${result} !== undefined || ${present}`;
    e.line(`if (${result} === FAIL) ${tolerated ? `{ if (${present}) ${e.fail}; }` : `${e.fail};`}`);
    e.line(`else if (${kept}) ${member(out, key)} = ${result};`);
  }
}

/**
 * A record with plain string keys: a plain object's own enumerable keys, each value checked
 * (`__proto__` left out, as zod does). An object with symbol keys or its own `constructor`
 * (which zod's plain-object test reads) is left to zod.
 */
function emitRecord(e: Emitter, def: Def, x: string, path: Path): string | undefined {
  const keyType = def.keyType as z.ZodType;
  if (defOf(keyType).type !== "string" || !isBare(keyType)) return undefined;
  const [proto, out, key, item] = [e.name(`${x}_proto`), e.name(`${x}_out`), e.name("key"), e.name(`${x}_item`)];
  e.line(`if (${notObject(x)}) ${e.fail};`);
  e.line(`const ${proto}: unknown = Object.getPrototypeOf(${x});`);
  e.line(
    `if ((${proto} !== Object.prototype && ${proto} !== null) || Object.hasOwn(${x}, "constructor") || Object.getOwnPropertySymbols(${x}).length > 0) ${e.fail};`,
  );
  e.line(`const ${out}: Obj = {};`);
  e.line(`for (const ${key} of Object.keys(${x})) {`);
  e.line(`if (${key} === "__proto__") continue;`);
  e.line(`const ${item} = (${x} as Obj)[${key}];`);
  e.line(`${out}[${key}] = ${emitNode(e, def.valueType as z.ZodType, item, [...path, "valueType"])};`);
  e.line("}");
  return out;
}

/**
 * A union: the first option that accepts, each tried in a labelled block that a refusal leaves;
 * an object option whose required keys are not all there is skipped without a try. An
 * exclusive union (z.xor) or one that falls back is left to zod.
 */
function emitUnion(e: Emitter, def: Def, x: string, path: Path): string | undefined {
  if (def.inclusive === false || def.unionFallback) return undefined;
  const out = e.name(`${x}_union`);
  e.line(`let ${out}: unknown = FAIL;`);
  (def.options as z.ZodType[]).forEach((option, i) => {
    const label = e.name(`${x}_option`);
    const tests = [i > 0 ? `${out} === FAIL` : "", requiredKeys(option, x)].filter((t) => t !== "");
    e.line(`${label}: ${tests.length > 0 ? `if (${tests.join(" && ")}) ` : ""}{`);
    const value = e.refusingTo(label, () => emitNode(e, option, x, [...path, "options", i]));
    e.line(`${out} = ${value};`);
    e.line("}");
  });
  e.line(`if (${out} === FAIL) ${e.fail};`);
  return out;
}

/** For an object option: a test that its required keys are all in `x` (else it refuses for sure); "" for any other. */
function requiredKeys(option: z.ZodType, x: string): string {
  const def = defOf(option);
  if (def.type !== "object" || !isBare(option)) return "";
  const shape = def.shape as Record<string, z.ZodType>;
  const required = Object.keys(shape).filter((k) => k !== "__proto__" && presence(shape[k]!).optin === undefined);
  if (required.length === 0) return "";
  return `${isObject(x)} && ${required.map((k) => `${JSON.stringify(k)} in ${x}`).join(" && ")}`;
}

/**
 * A discriminated union: only the option its tag names is tried, as zod does. Each option must
 * be an object whose tag is a literal or an enum, no value claimed twice; else zod decides.
 */
function emitTagged(e: Emitter, def: Def, x: string, path: Path): string | undefined {
  if (def.unionFallback) return undefined;
  const tag = def.discriminator as string;
  const options = def.options as z.ZodType[];
  const claimed = new Set<unknown>();
  const tagValues: unknown[][] = [];
  for (const option of options) {
    const od = defOf(option);
    const field = od.type === "object" ? (od.shape as Record<string, z.ZodType>)[tag] : undefined;
    const values = field === undefined ? undefined : acceptedValues(field);
    if (values === undefined || values.length === 0 || values.some((v) => claimed.has(v))) return undefined;
    for (const v of values) claimed.add(v);
    tagValues.push(values);
  }
  const [value, out] = [e.name(`${x}_${tag}`), e.name(`${x}_union`)];
  e.line(`if (${notObject(x)}) ${e.fail};`);
  e.line(`const ${value} = ${member(`(${x} as Obj)`, tag)};`);
  e.line(`let ${out}: unknown;`);
  options.forEach((option, i) => {
    const test = tagValues[i]!.map((v) => `${value} === ${literalSource(v)}`).join(" || ");
    e.line(`${i === 0 ? "if" : "} else if"} (${test}) {`);
    e.line(`${out} = ${emitNode(e, option, x, [...path, "options", i])};`);
  });
  e.line(`} else ${e.fail};`);
  return out;
}
