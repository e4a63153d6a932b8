/**
 * An MCP tool's `inputSchema` as function `parameters` both the Responses and the Chat
 * Completions APIs take: an object schema with `properties`, no `$schema`/`$id`, a `type` on
 * every node where one can be told (properties: object, items: array, enum: its values' type),
 * boolean sub-schemas made objects, nesting and size bounded. A schema past the bounds is
 * replaced by an open object, and the description says so (the server still validates).
 */
const MAX_DEPTH = 24;
const MAX_SCHEMA_CHARS = 64 * 1024;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

function inferType(node: Json): string | undefined {
  if (isObject(node.properties) || isObject(node.additionalProperties) || Array.isArray(node.required)) return "object";
  if (node.items !== undefined || node.prefixItems !== undefined) return "array";
  const values = Array.isArray(node.enum) ? node.enum : "const" in node ? [node.const] : undefined;
  if (values && values.length > 0) {
    const types = new Set(
      values.map((v) =>
        v === null ? "null" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v,
      ),
    );
    if (types.size === 1) return [...types][0];
  }
  return undefined;
}

const SUBSCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions"] as const;
const SUBSCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"] as const;
const SUBSCHEMAS = ["items", "additionalProperties", "not", "if", "then", "else", "contains"] as const;

function clean(node: unknown, depth: number): Json {
  if (node === true || !isObject(node)) return {};
  if (depth > MAX_DEPTH) return {};
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$schema" || k === "$id") continue;
    if ((SUBSCHEMA_MAPS as readonly string[]).includes(k) && isObject(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, clean(sub, depth + 1)]));
    } else if ((SUBSCHEMA_LISTS as readonly string[]).includes(k) && Array.isArray(v)) {
      out[k] = v.map((sub) => clean(sub, depth + 1));
    } else if ((SUBSCHEMAS as readonly string[]).includes(k) && (isObject(v) || typeof v === "boolean")) {
      out[k] = k === "additionalProperties" && typeof v === "boolean" ? v : clean(v, depth + 1);
    } else out[k] = v;
  }
  if (
    out.type === undefined &&
    out.anyOf === undefined &&
    out.oneOf === undefined &&
    out.allOf === undefined &&
    out.$ref === undefined
  ) {
    const t = inferType(out);
    if (t) out.type = t;
  }
  return out;
}

export interface ModelParameters {
  parameters: Json;
  /** Set when the schema could not be used as it is. */
  note?: string;
}

export function toolParameters(inputSchema: unknown): ModelParameters {
  const open = (note: string): ModelParameters => ({
    parameters: { type: "object", properties: {}, additionalProperties: true },
    note,
  });
  if (!isObject(inputSchema)) return open("(the server gave no input schema)");
  let size: number;
  try {
    size = JSON.stringify(inputSchema).length;
  } catch {
    return open("(the server's input schema is not JSON)");
  }
  if (size > MAX_SCHEMA_CHARS)
    return open(
      `(the server's input schema, ${size} characters, is too large to show; pass the arguments its documentation names)`,
    );
  const parameters = clean(inputSchema, 0);
  if (parameters.type !== "object")
    return open(`(the server's input schema is not an object schema: ${JSON.stringify(inputSchema).slice(0, 200)})`);
  if (!isObject(parameters.properties)) parameters.properties = {};
  return { parameters };
}
