/**
 * Secret redaction, wherever rollout text is copied somewhere more shareable: infty's event
 * log (and the live view that shows it), and everything the memory pipeline derives: the
 * extractors' input (before a title, slug, keyword or truncation is derived from it), every
 * stored field, every file of the memory folder and its names and git baseline, and the summary
 * injected into sessions. Rollouts themselves stay verbatim (private files: see rollout/writer.ts).
 *
 * A match becomes `[REDACTED_SECRET]`. For assignments, headers and URLs the name, scheme and
 * user stay and only the value goes. Thresholds and false positives: docs/memories.md and
 * test/memories/redact-patterns.test.ts.
 */
import { isPlaceholderValue, isSecretValue, looksLikeAwsSecret, looksRandom, nameKind } from "./secret-shape.ts";

export const REDACTED = "[REDACTED_SECRET]";

type Replacer = (match: string, ...groups: string[]) => string;

interface Rule {
  name: string;
  re: RegExp;
  replace: string | Replacer;
}

/** Start of a token: not after a letter, digit or `_`, except right after a JSON escape (`\n`). */
const B = String.raw`(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))`;

/** Tokens recognised by their vendor prefix. */
const PREFIXED: Array<[string, string]> = [
  ["aws_access_key_id", String.raw`(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])`],
  ["github_token", String.raw`(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`],
  ["gitlab_token", String.raw`gl(?:pat|dt|rt|ptt|cbt|oas|imt|ft)-[A-Za-z0-9_-]{20,}`],
  ["slack_token", String.raw`(?:xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})`],
  ["google_api_key", String.raw`AIza[0-9A-Za-z_-]{35}`],
  ["google_oauth_token", String.raw`(?:ya29\.[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{30,})`],
  ["stripe_key", String.raw`(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})`],
  ["npm_token", String.raw`npm_[A-Za-z0-9]{36}`],
  ["huggingface_token", String.raw`hf_[A-Za-z]{30,}`],
  ["sendgrid_key", String.raw`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`],
  ["pypi_token", String.raw`pypi-AgE[A-Za-z0-9_-]{50,}`],
  ["docker_pat", String.raw`dckr_pat_[A-Za-z0-9_-]{20,}`],
  ["digitalocean_token", String.raw`do[por]_v1_[a-f0-9]{64}`],
  ["shopify_token", String.raw`shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`],
  ["jwt", String.raw`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`],
];

/** A private key body after its BEGIN line, when the END line is missing (truncated output). */
const PEM_BODY = String.raw`(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+:[^\n\\]*))*(?:(?:\s|\\[nr])*[A-Za-z0-9+/=]+)?`;

const EARLY_RULES: Rule[] = [
  {
    name: "private_key_block",
    re: new RegExp(String.raw`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|${PEM_BODY})`, "g"),
    replace: REDACTED,
  },
  // scheme://user:password@host: the user stays. The password may hold an unencoded `@` (greedy).
  {
    name: "url_password",
    re: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:/?#@'"]*):([^\s/'"]+)@/gi,
    replace: (m, scheme, user, pw) => (isPlaceholderValue(pw!) ? m : `${scheme}${user}:${REDACTED}@`),
  },
  // scheme://TOKEN@host (a token used as the user name).
  {
    name: "url_token_user",
    re: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:/?#@'"]+)@/gi,
    replace: (m, scheme, user) => (looksRandom(user!) ? `${scheme}${REDACTED}@` : m),
  },
  { name: "slack_webhook", re: /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9/_-]+/g, replace: REDACTED },
  { name: "discord_webhook", re: /https:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]+/g, replace: REDACTED },
  // OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-): random bodies always hold a digit.
  { name: "openai_anthropic_key", re: new RegExp(`${B}sk-[A-Za-z0-9_-]{20,}`, "g"), replace: (m) => (/\d/.test(m) ? REDACTED : m) },
  ...PREFIXED.map(([name, src]): Rule => ({ name, re: new RegExp(B + src, "g"), replace: REDACTED })),
  {
    name: "authorization_header",
    re: /\b((?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:bearer|basic|token|bot|digest|negotiate|apikey|sso-key)[ \t]+)?)([^\s"'\\,]+)/gi,
    replace: (m, head, cred) => (cred!.length < 4 || isPlaceholderValue(cred!) ? m : `${head}${REDACTED}`),
  },
  {
    name: "bearer_token",
    re: /\b(bearer[ \t]+)([A-Za-z0-9._~+/-]+=*)/gi,
    replace: (m, head, tok) => (looksRandom(tok!) || tok!.startsWith("eyJ") ? `${head}${REDACTED}` : m),
  },
  // .netrc: machine HOST login USER password PASS
  {
    name: "netrc_password",
    re: /\b(machine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+)(\S+)/g,
    replace: (m, head, pw) => (isPlaceholderValue(pw!) ? m : `${head}${REDACTED}`),
  },
  {
    name: "xml_element",
    re: /<([A-Za-z_][\w.-]*)>([^<\n]{1,200})<\/\1>/g,
    replace: (m, tag, v) => (isSecretValue(nameKind(tag!), v!.trim()) ? `<${tag}>${REDACTED}</${tag}>` : m),
  },
];

const LATE_RULES: Rule[] = [
  // curl -u user:password (numeric uid:gid, as in docker --user 1000:1000, stays).
  {
    name: "cli_user_password",
    re: /(^|[\s"'])(-u|--user)([ \t]+|=)(\\?["']?)([^\s:"'\\]+):([^\s"'\\]+)/g,
    replace: (m, pre, flag, sp, q, user, pw) =>
      isPlaceholderValue(pw!) || (/^\d+$/.test(user!) && /^\d+$/.test(pw!)) ? m : `${pre}${flag}${sp}${q}${user}:${REDACTED}`,
  },
  {
    name: "aws_secret_access_key",
    re: /(?:(?<![A-Za-z0-9/+])|(?<=\\[nrt]))[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    replace: (m) => (looksLikeAwsSecret(m) ? REDACTED : m),
  },
];

/** `name = value`, `name: value`, `"name": "value"`, `name := value`, and JSON nested in JSON (`\\\"name\\\":...`). */
const ASSIGN_RE = /(?<![\w.])([A-Za-z_][\w.-]*)(\\*["']?[ \t]*(?::=|[:=])(?!=)[ \t]*)/g;
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
    while (end < text.length && text[end] !== "\n" && !text.startsWith(quote, end)) end += quote.length === 1 && text[end] === "\\" ? 2 : 1;
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
    const kind = nameKind(m[1]!);
    if (kind === "none") continue;
    const span = scanValue(text, at + m[0].length);
    if (!span || !isSecretValue(kind, span.value, m[1])) continue;
    out += text.slice(last, span.start) + REDACTED;
    last = span.end;
  }
  return last === 0 ? text : out + text.slice(last);
}

function applyRules(text: string, rules: Rule[]): string {
  let out = text;
  for (const rule of rules) out = out.replace(rule.re, rule.replace as Replacer);
  return out;
}

export function redactSecrets(text: string): string {
  if (!text) return text;
  let out = applyRules(text, EARLY_RULES);
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
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [redactShort(k), deep(x, k)]));
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
