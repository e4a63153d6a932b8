/**
 * Secret redaction applied to rollout text before it reaches a model and to every phase 1 field
 * before it is stored. Each match becomes `[REDACTED_SECRET]`; for assignments, URL passwords and
 * auth headers the name/scheme is kept and only the value is replaced.
 */
export const REDACTED = "[REDACTED_SECRET]";

interface Rule {
  name: string;
  re: RegExp;
  replace: string | ((...m: string[]) => string);
}

const RULES: Rule[] = [
  {
    name: "private_key_block",
    re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END \1PRIVATE KEY\2-----/g,
    replace: REDACTED,
  },
  // scheme://user:password@host → keep the user, drop the password.
  {
    name: "url_password",
    re: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:/@'"]+):([^\s@/'"]+)@/gi,
    replace: (_m, scheme, user) => `${scheme}${user}:${REDACTED}@`,
  },
  { name: "openai_key", re: /\bsk-(?:proj-|ant-(?:api\d+-)?|svcacct-)?[A-Za-z0-9_-]{20,}/g, replace: REDACTED },
  { name: "aws_access_key", re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, replace: REDACTED },
  { name: "github_token", re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})\b/g, replace: REDACTED },
  { name: "gitlab_token", re: /\bglpat-[A-Za-z0-9_-]{20,}\b/g, replace: REDACTED },
  { name: "slack_token", re: /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g, replace: REDACTED },
  { name: "slack_webhook", re: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g, replace: REDACTED },
  { name: "npm_token", re: /\bnpm_[A-Za-z0-9]{36}\b/g, replace: REDACTED },
  { name: "google_api_key", re: /\bAIza[0-9A-Za-z_-]{35}\b/g, replace: REDACTED },
  { name: "stripe_key", re: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g, replace: REDACTED },
  { name: "jwt", re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, replace: REDACTED },
  {
    name: "authorization_basic",
    re: /\b(authorization\s*[:=]\s*["']?basic\s+)[A-Za-z0-9+/=]{8,}/gi,
    replace: (_m, head) => `${head}${REDACTED}`,
  },
  { name: "bearer", re: /\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*/gi, replace: `Bearer ${REDACTED}` },
  {
    name: "assignment",
    re: /\b((?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|apikey|token|secret|password|passwd|pwd|access[_-]?key|private[_-]?key|client[_-]?secret)\s*[:=]\s*["']?)([^\s"']{8,})/gi,
    replace: (_m, head, value) => (value.startsWith(REDACTED) ? `${head}${value}` : `${head}${REDACTED}`),
  },
];

export function redactSecrets(text: string): string {
  if (!text) return text;
  let out = text;
  for (const rule of RULES) out = out.replace(rule.re, rule.replace as (substring: string, ...args: any[]) => string);
  return out;
}

export const REDACTION_RULES: readonly string[] = RULES.map((r) => r.name);
