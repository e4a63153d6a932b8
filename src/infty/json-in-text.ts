/**
 * Finds the JSON objects a model's reply holds, the way a reader would: the whole reply, a
 * fenced block anywhere in it, or a balanced `{…}` in prose (several message items of one
 * response arrive joined, so an object after a commentary item is found too). Models asked for
 * "JSON only" still wrap it in fences and chatter; a strict parser would read that as silence.
 */

/** Every JSON object in `text`, most likely meant first: whole text, fences (last first), objects in prose (last first). */
export function jsonObjectsIn(text: string): Record<string, unknown>[] {
  const candidates = [text.trim(), ...fencedBlocks(text).reverse(), ...balancedObjects(text).reverse()];
  const seen = new Set<string>();
  const out: Record<string, unknown>[] = [];
  for (const c of candidates) {
    if (seen.has(c)) continue;
    seen.add(c);
    const v = parseObject(c);
    if (v) out.push(v);
  }
  return out;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith("{")) return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The insides of ``` fences (any info string: json, JSON, jsonc, none). */
function fencedBlocks(text: string): string[] {
  return [...text.matchAll(/```[^\n`]*\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
}

/**
 * Top-level `{…}` spans, braces inside JSON strings not counted. A stray `{` in prose that
 * never closes is skipped: scanning goes on after it.
 */
function balancedObjects(text: string): string[] {
  const out: string[] = [];
  let start = text.indexOf("{");
  while (start !== -1) {
    const end = matchingBrace(text, start);
    if (end === -1) {
      start = text.indexOf("{", start + 1);
      continue;
    }
    out.push(text.slice(start, end + 1));
    start = text.indexOf("{", end + 1);
  }
  return out;
}

/** Index of the `}` closing the `{` at `open`, or -1. */
function matchingBrace(text: string, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{") depth++;
    else if (ch === "}" && --depth === 0) return i;
  }
  return -1;
}

/** Whether prose (fences left out) asks something: a sentence that ends in a question mark. */
export function asksQuestion(text: string): boolean {
  const prose = text.replace(/```[\s\S]*?```/g, " ");
  return /\?(?=\s|$|["')\]*_])/.test(prose);
}
