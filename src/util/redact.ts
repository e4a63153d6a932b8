/**
 * Secret redaction, wherever rollout text is copied somewhere more shareable: infty's event
 * log (and the live view that shows it), and everything the memory pipeline derives: the
 * extractors' input (before a title, slug, keyword or truncation is derived from it), every
 * stored field, every file of the memory folder and its names and git baseline, and the summary
 * injected into sessions. Rollouts themselves stay verbatim (private files: see rollout/writer.ts).
 *
 * A match becomes `[REDACTED_SECRET]`. For assignments, headers and URLs the name, scheme and
 * user stay and only the value goes. The rules: redact-rules.ts (patterns), redact-cli.ts (the
 * password options of clients), redact-wrapped.ts (tokens a line break cut in two); this module
 * runs them and the name-based rules. Thresholds and false positives: docs/memories.md and
 * test/memories/redact-patterns.test.ts.
 */
import { redactClientPasswords } from "./redact-cli.ts";
import { EARLY_RULES, LATE_RULES, REDACTED, type Rule } from "./redact-rules.ts";
import { redactWrappedTokens } from "./redact-wrapped.ts";
import { isSecretValue, looksRandom, nameKind } from "./secret-shape.ts";

export { REDACTED };

/**
 * `name = value`, `name: value`, `"name": "value"`, `name := value`, and JSON nested in JSON
 * (`\\\"name\\\":...`). A name may start with a dot: a file in a Kubernetes secret (`.dockerconfigjson`).
 */
const ASSIGN_RE = /(?<![\w.])(\.?[A-Za-z_][\w.-]*)(\\*["']?[ \t]*(?::=|[:=])(?!=)[ \t]*)/g;
/** `--name value` (the `--name=value` form is an assignment). */
const FLAG_RE = /(?<![\w-])--([A-Za-z][\w-]*)[ \t]+(?=[^\s-])/g;

export interface ValueSpan {
  start: number;
  end: number;
  value: string;
}

/** The value that starts at `at`: a quoted string (plain or escaped quotes, at any depth) or a bare word. */
export function scanValue(text: string, at: number): ValueSpan | undefined {
  const quote = /^\\*["']/.exec(text.slice(at, at + 16))?.[0];
  if (quote) {
    const start = at + quote.length;
    let end = start;
    while (end < text.length && text[end] !== "\n" && !text.startsWith(quote, end))
      end += quote.length === 1 && text[end] === "\\" ? 2 : 1;
    end = Math.min(end, text.length);
    return { start, end, value: text.slice(start, end) };
  }
  let end = at;
  while (end < text.length && !endsBareValue(text, end)) end++;
  // Trailing punctuation belongs to the surrounding syntax (`{token: abc},`).
  while (end > at && ",;)]}".includes(text[end - 1]!)) end--;
  return end > at ? { start: at, end, value: text.slice(at, end) } : undefined;
}

/** Whitespace, a quote, `&` (query strings), a JSON escape, or `;` before the next `Key=` (connection strings). */
function endsBareValue(text: string, i: number): boolean {
  const c = text[i]!;
  if (/[\s"'&]/.test(c)) return true;
  if (c === "\\") return /[nrt"'\\]/.test(text[i + 1] ?? "");
  return c === ";" && /^;[ \t]*[A-Za-z][\w ]*=/.test(text.slice(i, i + 40));
}

/** Replaces the value after every `re` match (group 1: the name) whose name is secret-ish and whose value is a secret. */
function redactValuesAfter(text: string, re: RegExp): string {
  let out = "";
  let last = 0;
  for (const m of text.matchAll(re)) {
    const at = m.index ?? 0;
    if (at < last) continue;
    const name = m[1]!;
    const kind = nameKind(name);
    if (kind === "none" && !name.startsWith(".")) continue;
    const span = scanValue(text, at + m[0].length);
    if (!span || !(kind === "none" ? looksLikeEncodedFile(span.value) : isSecretValue(kind, span.value, name)))
      continue;
    out += text.slice(last, span.start) + REDACTED;
    last = span.end;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** A dot-named key's value that is a base64-encoded file (`.dockerconfigjson: eyJhdXRocyI6…`), not `v20.11.1`. */
function looksLikeEncodedFile(v: string): boolean {
  return /^[A-Za-z0-9+/]{16,}={0,2}$/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && /\d/.test(v);
}

function applyRules(text: string, rules: Rule[]): string {
  let out = text;
  for (const rule of rules) out = out.replace(rule.re, rule.replace as (match: string, ...args: unknown[]) => string);
  return out;
}

export function redactSecrets(text: string): string {
  if (!text) return text;
  // Wrapped tokens first: a rule below would redact the first part alone and leave the rest.
  let out = applyRules(redactWrappedTokens(text), EARLY_RULES);
  out = redactClientPasswords(out);
  out = redactValuesAfter(out, ASSIGN_RE);
  out = redactValuesAfter(out, FLAG_RE);
  return applyRules(out, LATE_RULES);
}

/**
 * Redacts every string (and key) of a JSON-like value. `arguments` strings that hold JSON (tool
 * call arguments) are parsed first, so their escapes cannot hide a value from the rules.
 */
export function redactDeep<T>(value: T): T {
  return deep(value, undefined) as T;
}

function deep(v: unknown, key: string | undefined): unknown {
  if (typeof v === "string") return key === "arguments" ? redactJsonText(v) : redactShort(v);
  if (Array.isArray(v)) return v.map((x) => deep(x, undefined));
  if (v !== null && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [redactShort(k), deep(x, k)]));
  return v;
}

/**
 * Keys and short values repeat in every item (`type`, `role`, `message`, `input_text`, tool
 * names): a short string the rules leave unchanged is remembered as clean (a bounded set that
 * never holds a secret, since strings the rules change are not kept).
 */
const cleanShort = new Set<string>();

function redactShort(s: string): string {
  if (s.length > 64) return redactSecrets(s);
  if (cleanShort.has(s)) return s;
  const r = redactSecrets(s);
  if (r === s) {
    if (cleanShort.size >= 4096) cleanShort.clear();
    cleanShort.add(s);
  }
  return r;
}

function redactJsonText(s: string): string {
  try {
    return JSON.stringify(deep(JSON.parse(s), undefined));
  } catch {
    return redactSecrets(s);
  }
}

/** `text` with each redaction marker replaced by `by`: for titles that become slugs and keywords. */
export function withoutMarkers(text: string, by = " "): string {
  return text.split(REDACTED).join(by);
}

/** A slug fit for a file name: redacted, without markers and without random-looking words. */
export function safeSlug(slug: string | null): string | null {
  if (slug === null) return null;
  const red = withoutMarkers(redactSecrets(slug), "");
  const kept = red.replace(/[A-Za-z0-9]+/g, (w) => (looksRandom(w, 12) ? "" : w));
  // Where something was dropped, the separators around it go too: `deploy-with-` -> `deploy-with`.
  const s = (kept === slug ? kept : kept.replace(/([-_])[-_]+/g, "$1").replace(/^[-_]+|[-_]+$/g, "")).trim();
  return s || null;
}
