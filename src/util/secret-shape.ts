/**
 * Shape tests behind secret redaction: is a name secret-ish, is a value random-looking, is a
 * value really code or a placeholder. Pure functions; the thresholds are pinned by
 * test/memories/redact.test.ts and redact-patterns.test.ts (secrets and false positives).
 */

/** Bits per character of `s` (Shannon entropy of its character histogram). */
export function shannonEntropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

function charClass(c: string): number {
  if (c >= "A" && c <= "Z") return 0;
  if (c >= "a" && c <= "z") return 1;
  if (c >= "0" && c <= "9") return 2;
  return 3;
}

/** How often neighbouring characters change class (upper, lower, digit, other). Words change rarely. */
export function classTransitions(s: string): number {
  let n = 0;
  for (let i = 1; i < s.length; i++) if (charClass(s[i]!) !== charClass(s[i - 1]!)) n++;
  return n;
}

/**
 * A random-looking token of at least `minLen` characters: letters and digits, no whitespace,
 * >= 3 bits/char and a class change at >= 1 in 5 positions (or all hex). Hex digests and UUIDs pass (they
 * are only tested next to a secret-ish name); words, versions and dates with few digits do not.
 */
export function looksRandom(v: string, minLen = 16): boolean {
  if (v.length < minLen || /\s/.test(v)) return false;
  if (!/[A-Za-z]/.test(v) || !/[0-9]/.test(v) || shannonEntropy(v) < 3) return false;
  // Hex has only two classes, so it changes class less often; a hex run of 16+ is a digest or a key.
  return /^[0-9a-f]+$/i.test(v) || classTransitions(v) / (v.length - 1) >= 0.2;
}

/**
 * A bare AWS secret access key: 40 base64 characters with both cases and many class changes.
 * Random keys have >= 11 changes in 99.998 % of cases (25 on average); CamelCase identifiers
 * have about 10 and wordy paths are excluded; git SHAs (lowercase hex) have no uppercase.
 */
export function looksLikeAwsSecret(v: string): boolean {
  if (v.length !== 40 || !/[A-Z]/.test(v) || !/[a-z]/.test(v) || isWordyPath(v)) return false;
  return classTransitions(v) >= 11 && shannonEntropy(v) >= 3.8;
}

/** `src/Session/Rollout/Phase2Test`: three or more segments made of words (`Phase`, `test`) and numbers. */
export function isWordyPath(v: string): boolean {
  const segs = v.split("/");
  return segs.length >= 3 && segs.every((s) => /^(?:[A-Z]?[a-z]+|[0-9]+)*$/.test(s));
}

/** `/etc/app.key`, `~/.ssh/id_ed25519`, `./certs/dev.pem`: a path, none of whose segments looks random. */
export function looksLikePath(v: string): boolean {
  return /^(?:~|\.{1,2})?\/./.test(v) && v.split("/").every((s) => !looksRandom(s, 12));
}

// Name words. A name is split at separators and camelCase humps: `SecretAccessKey` -> secret,
// access, key; `DB_PASSWORD` -> db, password.
const STRONG_WORDS = new Set(["password", "passwd", "passphrase", "passcode", "secret", "token", "apikey"]);
/** Only with a prefix (`DB_PWD`, `MYSQL_PASS`, `GITLAB_PAT`): bare `PWD` is the shell's cwd. */
const PREFIXED_STRONG_WORDS = new Set(["pwd", "pw", "pass", "pat"]);
/** Flat names whose last word hides in one segment (`authtoken`, `xapikey`, `secretaccesskey`). */
const STRONG_SUFFIXES = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "token",
  "apikey",
  "accesskey",
  "secretkey",
  "privatekey",
  "authkey",
  "masterkey",
];
/** Redacted only when the value looks random. */
const WEAK_WORDS = new Set([
  "key",
  "pass",
  "auth",
  "credential",
  "credentials",
  "cred",
  "creds",
  "cookie",
  "session",
  "sessionid",
  "sid",
  "sig",
  "signature",
  "salt",
  "private",
  "hmac",
]);
/** A last word that makes the name describe a secret instead of holding one (`token_count`, `secret_name`). */
const META_WORDS = new Set([
  "id",
  "ids",
  "type",
  "name",
  "names",
  "count",
  "file",
  "files",
  "path",
  "dir",
  "url",
  "uri",
  "endpoint",
  "env",
  "var",
  "length",
  "len",
  "size",
  "limit",
  "budget",
  "max",
  "min",
  "ttl",
  "expiry",
  "expires",
  "expiration",
  "header",
  "prefix",
  "suffix",
  "field",
  "kind",
  "format",
  "version",
  "hint",
  "label",
  "mode",
  "policy",
  "required",
  "enabled",
  "provider",
  "stdin",
  "source",
  "ref",
  "location",
  "command",
  "cmd",
  "helper",
  "usage",
  "used",
  "index",
  "scope",
  "scopes",
  "audience",
  "issuer",
  "algorithm",
  "alg",
  "lifetime",
  "duration",
  "timeout",
  "rotation",
  "store",
  "manager",
  "regex",
  "pattern",
  "schema",
  "strength",
  "fingerprint",
]);

export type NameKind = "strong" | "weak" | "none";

export function nameWords(name: string): string[] {
  return name
    .split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}

/** strong: any non-code value of 4+ chars is a secret; weak: only a random-looking one; none: not a secret name. */
export function nameKind(name: string): NameKind {
  const words = nameWords(name);
  const last = words[words.length - 1];
  if (last === undefined || META_WORDS.has(last) || words[0] === "no") return "none";
  const joined = words.join("");
  if (words.some((w) => STRONG_WORDS.has(w)) || STRONG_SUFFIXES.some((s) => joined.endsWith(s))) return "strong";
  if (words.length > 1 && PREFIXED_STRONG_WORDS.has(last)) return "strong";
  if (words.some((w) => WEAK_WORDS.has(w))) return "weak";
  return "none";
}

const CODE_WORDS = new Set([
  "string",
  "str",
  "number",
  "int",
  "integer",
  "float",
  "bool",
  "boolean",
  "bytes",
  "any",
  "unknown",
  "object",
  "null",
  "nil",
  "none",
  "undefined",
  "true",
  "false",
  "yes",
  "no",
  "on",
  "off",
  "await",
  "new",
  "this",
  "self",
  "required",
  "optional",
  "function",
  "async",
  "redacted",
]);

/**
 * Code, a reference or a placeholder, not a secret: `string`, `getToken()`, `config.token`,
 * `os.environ[...]`, `$VAR`, `${VAR}`, `$(cmd)`, `${{ secrets.X }}`, `%VAR%`, `<your key>`,
 * `***`/`****1234` (masked), `OPENAI_API_KEY` (a variable's name), `=>` (an operator), an
 * already redacted value. The price: a real password shaped like these (`(abc`, `$abc`) stays.
 */
export function isPlaceholderValue(v: string): boolean {
  if (v.startsWith("[REDACTED") || /^[[(=>]|^\*{3}|^\{\{/.test(v)) return true;
  if (/^\$[{(]|^\$[A-Za-z_]\w*[;,]?$|^%[A-Za-z_]\w*%$|^<[^<>]*>[;,]?$/.test(v)) return true;
  if (/^(.)\1*$/.test(v)) return true;
  if (CODE_WORDS.has(v.toLowerCase().replace(/[;,]$/, ""))) return true;
  if (/^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+[;,]?$/.test(v)) return true;
  if (/^[A-Za-z_$][\w$]{2,}(?:\.[\w$]+)*[([]/.test(v)) return true;
  if (/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(v)) return true;
  return false;
}

/** Whether `value`, found after a name of this kind, is redacted. `self.password = password` is code. */
export function isSecretValue(kind: NameKind, value: string, name?: string): boolean {
  if (kind === "none" || isPlaceholderValue(value)) return false;
  if (name !== undefined && nameWords(name).at(-1) === value.toLowerCase()) return false;
  if (kind === "strong") return value.length >= 4;
  // A path or URL next to a weak name (`ssh_key: ~/.ssh/id_ed25519`) is where the secret lives, not the secret.
  if (looksLikePath(value) || value.includes("://")) return false;
  return looksRandom(value);
}
