/**
 * Prompts that take values. A Markdown prompt (src/<room>/prompts/<name>.md, embedded by
 * scripts/build-prompts.ts) marks each value it takes as `{{name}}`; fillPrompt puts the values
 * in, in one pass (a value is never read for placeholders), and throws when a value is missing
 * or one is given that the prompt does not take.
 */

/** A prompt with placeholders: its text and the names it takes, in order of first use. */
export interface PromptTemplate<P extends string = string> {
  /** The Markdown file it comes from, for errors: `src/infty/prompts/objective.md`. */
  readonly source: string;
  readonly text: string;
  readonly placeholders: readonly P[];
}

/** `{{name}}`: a lowercase letter, then lowercase letters, digits and underscores. */
const PLACEHOLDER = /\{\{([a-z][a-z0-9_]*)\}\}/g;

/** The placeholder names of `text`, each once, in order of first use. */
export function placeholdersOf(text: string): string[] {
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
}

/** Where `text` has `{{` or `}}` outside a well-formed placeholder (a typo such as `{{ name }}`), as `line:column`. */
export function strayBraces(text: string): string[] {
  const blanked = text.replace(PLACEHOLDER, (m) => " ".repeat(m.length));
  const found: string[] = [];
  for (const m of blanked.matchAll(/\{\{|\}\}/g)) {
    const before = blanked.slice(0, m.index);
    const line = before.split("\n").length;
    found.push(`${line}:${m.index - before.lastIndexOf("\n")}`);
  }
  return found;
}

/** `t`'s text with each `{{name}}` replaced by `values[name]`; every placeholder takes a value, and only those. */
export function fillPrompt<P extends string>(
  t: PromptTemplate<P>,
  values: Readonly<Record<P, string | number>>,
): string {
  const given: Record<string, string | number> = values;
  const takes = new Set<string>(t.placeholders);
  const unknown = Object.keys(given).filter((k) => !takes.has(k));
  const missing = [...takes].filter((k) => !Object.hasOwn(given, k));
  if (unknown.length > 0 || missing.length > 0)
    throw new Error(
      `${t.source}: ${[
        missing.length > 0 ? `no value for ${missing.map((k) => `{{${k}}}`).join(", ")}` : "",
        unknown.length > 0 ? `it has no placeholder ${unknown.map((k) => `{{${k}}}`).join(", ")}` : "",
      ]
        .filter(Boolean)
        .join("; ")}`,
    );
  return t.text.replace(PLACEHOLDER, (_, name: string) => {
    if (!takes.has(name)) throw new Error(`${t.source}: {{${name}}} is in its text but not in its placeholders`);
    return String(given[name]);
  });
}
