/**
 * A SKILL.md's front matter: the YAML between a first line `---` and the next line `---`. It is
 * parsed by the `yaml` package, loaded on the first SKILL.md read (an executor that never lists
 * skills never loads it), with YAML's failsafe schema: every scalar is a string, so
 * `name: 2024` is the name "2024" and `hidden: true` the string "true".
 */

/** The front matter's YAML text, the file's line it starts on, and the body after it. */
export interface FrontMatterSplit {
  yaml: string;
  /** 1-based line of the file where `yaml` starts (the line after the opening `---`). */
  firstLine: number;
  body: string;
}

const DELIMITED = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/;

/** The front matter and body of `text`, or undefined when it does not start with a closed front matter. */
export function splitFrontMatter(text: string): FrontMatterSplit | undefined {
  const m = DELIMITED.exec(text);
  if (!m) return undefined;
  return { yaml: m[1]!, firstLine: 2, body: text.slice(m[0].length) };
}

export type FrontMatter =
  /** Top-level keys whose values are strings; other values (lists, maps) are left out. */
  | { fields: Record<string, string>; body: string }
  /** The YAML does not parse: `line` is the file's 1-based line of the first error. */
  | { invalid: { line: number; message: string } };

/** Parses `text`'s front matter as YAML; undefined when there is none (see `splitFrontMatter`). */
export async function parseFrontMatter(text: string): Promise<FrontMatter | undefined> {
  const split = splitFrontMatter(text);
  if (!split) return undefined;
  const { parseDocument } = await import("yaml");
  const doc = parseDocument(split.yaml, { schema: "failsafe", prettyErrors: false, uniqueKeys: true });
  const bad = doc.errors[0];
  if (bad) {
    const line = split.firstLine + lineIndex(split.yaml, bad.pos[0]);
    return { invalid: { line, message: bad.message } };
  }
  return { fields: stringFields(doc.toJS()), body: split.body };
}

/** 0-based line of `offset` in `text`. */
function lineIndex(text: string, offset: number): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

function stringFields(value: unknown): Record<string, string> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"));
}
