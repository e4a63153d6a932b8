/**
 * Unknown keys of a config file: warnings, never errors, each with the nearest known key as a
 * hint. The keys come either from a schema's object shapes (through default and optional
 * wrappers) or from a key tree generated ahead from those shapes (scripts/build-validators.ts),
 * which reads the same without building the schema.
 */
import { z } from "zod";

/** The keys of an object schema, each mapped to its own keys where it is an object too. */
export type KeyTree = { readonly [key: string]: KeyTree | null };

/** Unwraps default/optional wrappers down to an object schema's shape, if any. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  let cur: z.ZodType = schema;
  for (;;) {
    if (cur instanceof z.ZodDefault || cur instanceof z.ZodOptional) cur = cur.unwrap() as z.ZodType;
    else break;
  }
  return cur instanceof z.ZodObject ? (cur.shape as Record<string, z.ZodType>) : undefined;
}

/** The key tree of `schema`, null where it is not an object (what the generator writes out). */
export function keyTreeOf(schema: z.ZodType): KeyTree | null {
  const shape = shapeOf(schema);
  if (shape === undefined) return null;
  return Object.fromEntries(Object.entries(shape).map(([k, sub]) => [k, keyTreeOf(sub)]));
}

/** `unknown key "a.b" ignored` (with the nearest known key as a hint) for each key `schema` lacks. */
export function unknownKeys(schema: z.ZodType, raw: unknown, prefix: string): string[] {
  return unknownKeysIn(keyTreeOf(schema), raw, prefix);
}

/** unknownKeys, read from a key tree. */
export function unknownKeysIn(tree: KeyTree | null, raw: unknown, prefix: string): string[] {
  if (tree === null || raw === null || typeof raw !== "object" || Array.isArray(raw)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(raw)) {
    if (Object.hasOwn(tree, k)) {
      out.push(...unknownKeysIn(tree[k]!, v, `${prefix}${k}.`));
      continue;
    }
    const hint = closest(k, Object.keys(tree));
    out.push(`unknown key "${prefix}${k}" ignored${hint ? ` (did you mean "${prefix}${hint}"?)` : ""}`);
  }
  return out;
}

function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDist = Math.max(2, Math.floor(word.length / 4)) + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c);
    if (d < bestDist) [best, bestDist] = [c, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
