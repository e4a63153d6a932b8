/**
 * The pattern rules of secret redaction (src/util/redact.ts runs them): vendor tokens, key
 * blocks, URLs, headers. Each is a global regex and what a match becomes; the examples that
 * must and must not match are in test/memories/redact*.test.ts and the corpus.
 */
import { isPlaceholderValue, isSecretValue, looksLikeAwsSecret, looksRandom, nameKind } from "./secret-shape.ts";

export const REDACTED = "[REDACTED_SECRET]";

export type Replacer = (match: string, ...args: never[]) => string;

export interface Rule {
  name: string;
  re: RegExp;
  replace: string | Replacer;
}

export interface Span {
  start: number;
  end: number;
}

/** `text` with each span replaced by the marker; overlapping spans become one marker. */
export function replaceSpans(text: string, spans: Span[]): string {
  if (spans.length === 0) return text;
  let out = "";
  let last = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    if (s.start < last) last = Math.max(last, s.end);
    else {
      out += text.slice(last, s.start) + REDACTED;
      last = s.end;
    }
  }
  return out + text.slice(last);
}

/** Start of a token: not after a letter, digit or `_`, except right after a JSON escape (`\n`). */
export const B = String.raw`(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))`;

/**
 * Tokens recognised by their vendor prefix: the prefix, then the body. The prefixes also find
 * tokens a terminal wrapped across lines (redact-wrapped.ts). `keep` vetoes a match.
 */
interface TokenShape {
  name: string;
  prefix: string;
  body: string;
  keep?: (match: string) => boolean;
}

const TOKENS: TokenShape[] = [
  // OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-): random bodies always hold a digit.
  { name: "openai_anthropic_key", prefix: "sk-", body: "[A-Za-z0-9_-]{20,}", keep: (m) => !/\d/.test(m) },
  { name: "aws_access_key_id", prefix: "(?:AKIA|ASIA|ABIA|ACCA)", body: "[A-Z0-9]{16}(?![A-Za-z0-9])" },
  { name: "github_token", prefix: "gh[pousr]_", body: "[A-Za-z0-9]{30,}" },
  { name: "github_token", prefix: "github_pat_", body: "[A-Za-z0-9_]{22,}" },
  { name: "gitlab_token", prefix: "gl(?:pat|dt|rt|ptt|cbt|oas|imt|ft)-", body: "[A-Za-z0-9_-]{20,}" },
  { name: "slack_token", prefix: "xox[abeoprs]-", body: "[A-Za-z0-9-]{10,}" },
  { name: "slack_token", prefix: String.raw`xapp-\d-`, body: "[A-Za-z0-9-]{10,}" },
  { name: "google_api_key", prefix: "AIza", body: "[0-9A-Za-z_-]{35}" },
  { name: "google_oauth_token", prefix: String.raw`ya29\.`, body: "[0-9A-Za-z_-]{20,}" },
  { name: "google_oauth_token", prefix: "1//0", body: "[0-9A-Za-z_-]{30,}" },
  { name: "stripe_key", prefix: "(?:sk|rk|pk)_(?:live|test)_", body: "[A-Za-z0-9]{16,}" },
  { name: "stripe_key", prefix: "whsec_", body: "[A-Za-z0-9]{24,}" },
  { name: "npm_token", prefix: "npm_", body: "[A-Za-z0-9]{36}" },
  { name: "huggingface_token", prefix: "hf_", body: "[A-Za-z]{30,}" },
  { name: "sendgrid_key", prefix: String.raw`SG\.`, body: String.raw`[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}` },
  { name: "pypi_token", prefix: "pypi-AgE", body: "[A-Za-z0-9_-]{50,}" },
  { name: "docker_pat", prefix: "dckr_pat_", body: "[A-Za-z0-9_-]{20,}" },
  { name: "digitalocean_token", prefix: "do[por]_v1_", body: "[a-f0-9]{64}" },
  { name: "shopify_token", prefix: "shp(?:at|ca|pa|ss)_", body: "[a-fA-F0-9]{32}" },
  // HashiCorp Vault service, batch and recovery tokens.
  { name: "vault_token", prefix: String.raw`hv[sbr]\.`, body: "[A-Za-z0-9_-]{24,}" },
  { name: "mailgun_key", prefix: "key-", body: "[0-9a-f]{32}(?![A-Za-z0-9])" },
  { name: "jwt", prefix: "eyJ", body: String.raw`[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}` },
];

export interface TokenRule extends Rule {
  /** The prefix, at the start of a string. */
  starts: RegExp;
  /** The whole token, at the start of a string. */
  whole: RegExp;
  keep?: (match: string) => boolean;
}

export const TOKEN_RULES: TokenRule[] = TOKENS.map(({ name, prefix, body, keep }) => ({
  name,
  re: new RegExp(`${B}(?:${prefix})${body}`, "g"),
  replace: keep ? (m: string) => (keep(m) ? m : REDACTED) : REDACTED,
  starts: new RegExp(`^(?:${prefix})`),
  whole: new RegExp(`^(?:${prefix})${body}`),
  keep,
}));

/** Where a vendor token starts (any prefix above): a line ending in one may be a token cut in two. */
export const TOKEN_PREFIX = `${B}(?:${TOKENS.map((t) => t.prefix).join("|")})`;

/** A private key body after its BEGIN line, when the END line is missing (truncated output). */
const PEM_BODY = String.raw`(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+:[^\n\\]*))*(?:(?:\s|\\[nr])*[A-Za-z0-9+/=]+)?`;

/** A line break, raw or JSON-escaped. */
const BR = String.raw`(?:\r?\n|\\r\\n|\\n)`;

export const EARLY_RULES: Rule[] = [
  {
    name: "private_key_block",
    re: new RegExp(
      String.raw`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|${PEM_BODY})`,
      "g",
    ),
    replace: REDACTED,
  },
  // A PuTTY key file (.ppk): the lines after `Private-Lines: N` go, the header and public lines stay
  // (its `Private-MAC` goes as a random value next to a `private` name).
  {
    name: "putty_private_lines",
    re: new RegExp(
      String.raw`(Private-Lines:[ \t]*\d+)(${BR})[A-Za-z0-9+/=]+(?=[\s"'\\]|$)(?:${BR}[A-Za-z0-9+/=]+(?=[\s"'\\]|$))*`,
      "g",
    ),
    replace: (_m: string, head: string, br: string) => `${head}${br}${REDACTED}`,
  },
  // scheme://user:password@host: the user stays. The password may hold an unencoded `@` (greedy).
  {
    name: "url_password",
    re: /\b([a-z][a-z0-9+.-]{0,31}:\/\/)([^\s:/?#@'"]*):([^\s/'"]+)@/gi,
    replace: (m: string, scheme: string, user: string, pw: string) =>
      isPlaceholderValue(pw) ? m : `${scheme}${user}:${REDACTED}@`,
  },
  // scheme://TOKEN@host (a token used as the user name).
  {
    name: "url_token_user",
    re: /\b([a-z][a-z0-9+.-]{0,31}:\/\/)([^\s:/?#@'"]+)@/gi,
    replace: (m: string, scheme: string, user: string) => (looksRandom(user) ? `${scheme}${REDACTED}@` : m),
  },
  {
    name: "slack_webhook",
    re: /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9/_-]+/g,
    replace: REDACTED,
  },
  {
    name: "discord_webhook",
    re: /https:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]+/g,
    replace: REDACTED,
  },
  ...TOKEN_RULES,
  {
    name: "authorization_header",
    re: /\b((?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:bearer|basic|token|bot|digest|negotiate|apikey|sso-key)[ \t]+)?)([^\s"'\\,]+)/gi,
    replace: (m: string, head: string, cred: string) =>
      cred.length < 4 || isPlaceholderValue(cred) ? m : `${head}${REDACTED}`,
  },
  {
    name: "bearer_token",
    re: /\b(bearer[ \t]+)([A-Za-z0-9._~+/-]+=*)/gi,
    replace: (m: string, head: string, tok: string) =>
      looksRandom(tok) || tok.startsWith("eyJ") ? `${head}${REDACTED}` : m,
  },
  // .netrc: machine HOST login USER password PASS
  {
    name: "netrc_password",
    re: /\b(machine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+)(\S+)/g,
    replace: (m: string, head: string, pw: string) => (isPlaceholderValue(pw) ? m : `${head}${REDACTED}`),
  },
  {
    name: "xml_element",
    re: /<([A-Za-z_][\w.-]*)>([^<\n]{1,200})<\/\1>/g,
    replace: (m: string, tag: string, v: string) =>
      isSecretValue(nameKind(tag), v.trim()) ? `<${tag}>${REDACTED}</${tag}>` : m,
  },
];

/**
 * A callee whose quoted 32-hex argument is a digest or an id, not a secret: assertions and
 * comparisons (`expect(h).toBe("…")`, `isValid(…)`), hashing, UUIDs.
 */
function takesDigest(callee: string): boolean {
  return (
    /^(?:to|is)[A-Z]|^is$|^eq$/.test(callee) ||
    /assert|expect|equal|hash|digest|md5|sha\d|checksum|uuid|guid|hex|verify|compare|match/.test(callee.toLowerCase())
  );
}

/** Where the argument whose opening quote is at `at` starts (its escapes and blanks skipped), if after `(` or `,`. */
function argumentStart(text: string, at: number): number | undefined {
  let i = at;
  while (i > 0 && text[i - 1] === "\\") i--;
  while (i > 0 && (text[i - 1] === " " || text[i - 1] === "\t")) i--;
  return text[i - 1] === "(" || text[i - 1] === "," ? i : undefined;
}

/**
 * The function called with the argument list that is open at `at`, if it is a call: scans left
 * over the other arguments (nested brackets skipped) to an unclosed `(` on the same line.
 */
export function calleeAt(text: string, at: number): string | undefined {
  let depth = 0;
  for (let i = at - 1; i >= 0 && at - i <= 400; i--) {
    const c = text[i]!;
    if (c === "\n") return undefined;
    if (c === ")" || c === "]" || c === "}") depth++;
    else if (c === "[" || c === "{") {
      if (depth === 0) return undefined;
      depth--;
    } else if (c === "(") {
      if (depth > 0) depth--;
      else return /([A-Za-z_$][\w$]*)[ \t]*$/.exec(text.slice(Math.max(0, i - 80), i))?.[1];
    }
  }
  return undefined;
}

export const LATE_RULES: Rule[] = [
  // curl -u user:password (numeric uid:gid, as in docker --user 1000:1000, stays).
  {
    name: "cli_user_password",
    re: /(^|[\s"'])(-u|--user)([ \t]+|=)(\\?["']?)([^\s:"'\\]+):([^\s"'\\]+)/g,
    replace: (m: string, pre: string, flag: string, sp: string, q: string, user: string, pw: string) =>
      isPlaceholderValue(pw) || (/^\d+$/.test(user) && /^\d+$/.test(pw))
        ? m
        : `${pre}${flag}${sp}${q}${user}:${REDACTED}`,
  },
  {
    name: "aws_secret_access_key",
    re: /(?:(?<![A-Za-z0-9/+])|(?<=\\[nrt]))[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])/g,
    replace: (m: string) => (looksLikeAwsSecret(m) ? REDACTED : m),
  },
  // An unnamed 32-hex secret passed to a call: `Client("AC…", "…")` (Twilio's auth token), `new
  // Mailer(id, '…')`. A digest in prose, in `md5sum` output, in a list or compared stays.
  {
    name: "hex_call_argument",
    re: /(["'])([0-9a-f]{32}|[0-9A-F]{32})(\\*)\1(?=[ \t]*[,)])/g,
    replace: (m: string, q: string, _hex: string, esc: string, at: number, text: string) => {
      const open = argumentStart(text, at);
      const callee = open === undefined ? undefined : calleeAt(text, open);
      return callee === undefined || takesDigest(callee) ? m : `${q}${REDACTED}${esc}${q}`;
    },
  },
];
