/**
 * Passwords given to command-line clients: `mysql -pSECRET`, `sshpass -p SECRET`, `redis-cli -a
 * SECRET`, `smbclient -U user%SECRET`, `openssl … -passin pass:SECRET`, `htpasswd -b FILE USER
 * SECRET`. What an option holds depends on the program (`-p` is a port to `ssh` and `docker run`,
 * a password to `docker login`), so the rules are a table by program. A command is read word by
 * word after its program's name, up to its end (`;`, `|`, `&`, a line break), quotes (plain or
 * JSON-escaped) kept inside words. Options spelled `--name value` with a secret-ish name are the
 * generic rules' (redact.ts); this table holds the options whose name says nothing.
 */

import { replaceSpans, type Span } from "./redact-rules.ts";
import { isPlaceholderValue, looksLikePath, looksRandom, nameKind } from "./secret-shape.ts";

interface ClientRule {
  programs: string[];
  /** Options apply after one of these words only: `docker login -p` is a password, `docker run -p` a port. */
  sub?: string[];
  /**
   * Options whose value is the password: `-p X` and `-pX` (short), `--pass X` and `--pass=X`
   * (long), `-storepass X` (one dash, long), `/p:X` (Windows style).
   */
  flags?: string[];
  /** A short option's separate value: "no" where only `-pX` sets the password (7z: `-p` alone prompts). */
  separate?: "yes" | "no" | "if-password-like";
  /** The password is what follows this in the value: `user:pw`, `user%pw`, `pass:pw`. */
  after?: RegExp;
  /** The password is an argument: its index in the words after the subcommand (or program), if any. */
  positional?: (args: string[]) => number | undefined;
  /**
   * What the value must be, in place of "not a placeholder": `vault login TOKEN` wants a random
   * token (not a word of prose), and its `s.Ab12…` is no member access.
   */
  check?: (value: string) => boolean;
}

/** The index of the `n`th (1-based) word that is not an option and not a `key=value`. */
function nthArgument(args: string[], n: number): number | undefined {
  let seen = 0;
  for (let i = 0; i < args.length; i++)
    if (!args[i]!.startsWith("-") && !args[i]!.includes("=") && ++seen === n) return i;
  return undefined;
}

const MYSQL = [
  "mysql",
  "mysqldump",
  "mysqladmin",
  "mysqlimport",
  "mysqlcheck",
  "mysqlshow",
  "mysqlslap",
  "mysqlpump",
  "mysqlsh",
  "mariadb",
  "mariadb-dump",
  "mariadb-admin",
];
const MONGO = [
  "mongo",
  "mongosh",
  "mongodump",
  "mongorestore",
  "mongoexport",
  "mongoimport",
  "mongostat",
  "mongotop",
  "mongofiles",
];
const LDAP = [
  "ldapsearch",
  "ldapmodify",
  "ldapadd",
  "ldapdelete",
  "ldapwhoami",
  "ldappasswd",
  "ldapcompare",
  "ldapmodrdn",
  "ldapexop",
];
const SNMP = ["snmpwalk", "snmpbulkwalk", "snmpget", "snmpgetnext", "snmpset", "snmptable", "snmptrap"];
/** Registry and cluster logins whose `login` takes `-p PASSWORD`. */
const LOGINS = ["docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "crane", "az", "oc", "cf"];

const RULES: ClientRule[] = [
  // mysql -p X: X is the database (`-p` alone prompts), unless it looks like a password.
  { programs: MYSQL, flags: ["-p"], separate: "if-password-like" },
  { programs: ["mydumper", "myloader", "sshpass", "rdesktop", ...MONGO], flags: ["-p"] },
  { programs: ["redis-cli", "valkey-cli", "keydb-cli"], flags: ["-a", "--pass"] },
  { programs: LOGINS, sub: ["login"], flags: ["-p"] },
  { programs: LDAP, flags: ["-w"] },
  { programs: ["smbclient", "rpcclient", "smbcacls", "smbget", "smbtree"], flags: ["-U", "--user"], after: /%/ },
  { programs: ["openssl"], flags: ["-passin", "-passout", "-pass", "-password"], after: /^pass:/ },
  { programs: ["sqlcmd", "bcp", "osql", "ipmitool", "zip", "unzip", "zipcloak"], flags: ["-P"] },
  { programs: ["7z", "7za", "7zr", "7zz", "rar", "unrar"], flags: ["-p"], separate: "no" },
  {
    programs: ["keytool"],
    flags: ["-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass", "-new"],
  },
  { programs: ["lftp"], flags: ["-u"], after: /,/ },
  { programs: ["skopeo"], flags: ["--creds", "--src-creds", "--dest-creds"], after: /:/ },
  { programs: ["curl"], flags: ["-u", "--user", "-U", "--proxy-user"], after: /:/ },
  { programs: ["xfreerdp", "wlfreerdp", "sdl-freerdp"], flags: ["/p:"] },
  { programs: SNMP, flags: ["-A", "-X"] },
  // htpasswd -b FILE USER PASSWORD, htpasswd -nb USER PASSWORD.
  {
    programs: ["htpasswd"],
    positional: (args) => {
      const opts = args.filter((a) => /^-[A-Za-z]+$/.test(a)).join("");
      return opts.includes("b") ? nthArgument(args, opts.includes("n") ? 2 : 3) : undefined;
    },
  },
  { programs: ["vault"], sub: ["login"], positional: (args) => nthArgument(args, 1), check: (v) => looksRandom(v) },
  { programs: ["rabbitmqctl"], sub: ["add_user", "change_password"], positional: (args) => nthArgument(args, 2) },
  // npm config set //registry/:_authToken VALUE (the `KEY=VALUE` form is an assignment).
  {
    programs: ["npm", "pnpm", "yarn"],
    sub: ["set"],
    positional: (args) => (args[0] !== undefined && nameKind(args[0]) !== "none" ? 1 : undefined),
  },
];

const BY_PROGRAM = new Map<string, ClientRule[]>();
for (const rule of RULES) for (const p of rule.programs) BY_PROGRAM.set(p, [...(BY_PROGRAM.get(p) ?? []), rule]);

/** A program's name, not inside a word (the lookbehind first: it makes the scan several times faster). */
const PROGRAM_RE = new RegExp(
  String.raw`(?:(?<![\w-])|(?<=\\[nrt]))(?:${[...BY_PROGRAM.keys()].join("|")})(?=[ \t])`,
  "g",
);

/** The program's name starts a word: after a blank, a separator, a quote, a path's `/` or a JSON escape. */
function startsWord(text: string, at: number): boolean {
  return at === 0 || /[\s;&|(`"'/=]/.test(text[at - 1]!) || /\\[nrt]$/.test(text.slice(Math.max(0, at - 2), at));
}

/** Words of one command are read this far at most (bounds the work per program name). */
const MAX_CHARS = 1024;
const MAX_WORDS = 64;

/** The end of the quoted part opened by `quote` at `i`: after the closing quote, or at the line's end. */
function quotedEnd(text: string, i: number, quote: string, limit: number): number {
  let j = i + quote.length;
  while (j < limit && text[j] !== "\n" && !text.startsWith(quote, j)) j += quote === '"' && text[j] === "\\" ? 2 : 1;
  return j < limit && text.startsWith(quote, j) ? j + quote.length : j;
}

/** The end of the word at `i`: a blank or a command separator outside quotes. */
function wordEnd(text: string, i: number, limit: number): number {
  let j = i;
  while (j < limit) {
    const c = text[j]!;
    if (/[\s;|&`)<>]/.test(c)) break;
    if (c === "'" || c === '"') j = quotedEnd(text, j, c, limit);
    else if (c === "\\") {
      const quote = /^\\+["']/.exec(text.slice(j, j + 8))?.[0];
      if (quote) j = quotedEnd(text, j, quote, limit);
      else if (/[nrt]/.test(text[j + 1] ?? ""))
        break; // a JSON escape: the line (or word) ends
      else j += 2;
    } else j++;
  }
  return Math.min(j, limit);
}

/** The words of the command that starts at `from`. */
function commandWords(text: string, from: number): Span[] {
  const limit = Math.min(text.length, from + MAX_CHARS);
  const words: Span[] = [];
  let i = from;
  while (words.length < MAX_WORDS) {
    // Blanks, and line continuations (raw or JSON-escaped).
    const blank = /^(?:[ \t]+|\\\r?\n|\\\\\\n)+/.exec(text.slice(i, i + 64))?.[0];
    if (blank) i += blank.length;
    const end = wordEnd(text, i, limit);
    // Another client's name: its own words (`docker exec db mysql -pX`), so each word is read once.
    // The price: an argument spelled like a client (`-u docker`) ends the command early.
    if (end === i || BY_PROGRAM.has(text.slice(i, end))) break;
    words.push({ start: i, end });
    i = end;
  }
  return words;
}

/** The span inside a word's quotes, if it is quoted. */
function unquoted(text: string, s: Span): Span & { quoted: boolean } {
  const quote = /^\\*["']/.exec(text.slice(s.start, s.start + 8))?.[0];
  if (!quote) return { ...s, quoted: false };
  const close = text.indexOf(quote, s.start + quote.length);
  return { start: s.start + quote.length, end: close >= 0 && close < s.end ? close : s.end, quoted: true };
}

/** Upper, lower and digit, or a symbol: `S3cr3tPass`, `pa$$!`, not a database name (`shop`, `app_db2`). */
function looksLikePassword(v: string): boolean {
  return /[^\w.-]/.test(v) || (/[a-z]/.test(v) && /[A-Z]/.test(v) && /\d/.test(v));
}

const notPlaceholder = (v: string) => !isPlaceholderValue(v);

/**
 * The password in the value span `s`, if it holds one. A separate bare value that is a short
 * lowercase word is prose about the option (`docker login -p is deprecated`).
 */
function passwordIn(text: string, s: Span, rule: ClientRule, separate: boolean): Span | undefined {
  const inner = unquoted(text, s);
  // A bare value ends at a quote: what follows is the surrounding syntax (`-pX","cwd": …` in JSON).
  const end = inner.quoted ? inner.end : inner.start + /^[^"'\\]*/.exec(text.slice(inner.start, inner.end))![0].length;
  let start = inner.start;
  if (rule.after) {
    const m = rule.after.exec(text.slice(start, end));
    if (!m) return undefined;
    start += m.index + m[0].length;
  }
  const value = text.slice(start, end);
  if (value.length < 2 || looksLikePath(value) || !(rule.check ?? notPlaceholder)(value)) return undefined;
  if (
    separate &&
    !inner.quoted &&
    (/^[a-z]{1,4}$/.test(value) || (rule.separate === "if-password-like" && !looksLikePassword(value)))
  )
    return undefined;
  return { start, end };
}

/** The value of option `flag` in word `i`: attached to it (`-pX`, `--pass=X`, `/p:X`) or the next word. */
function optionValue(text: string, words: Span[], i: number, flag: string, rule: ClientRule): Span | undefined {
  const w = words[i]!;
  const word = text.slice(w.start, w.end);
  const short = /^-[A-Za-z0-9]$/.test(flag);
  if (word === flag && !flag.startsWith("/")) {
    const next = words[i + 1];
    if (!next || (short && rule.separate === "no")) return undefined;
    if (text.startsWith("-", next.start)) return undefined;
    return passwordIn(text, next, rule, true);
  }
  const attached = short || flag.startsWith("/") ? flag : flag.startsWith("--") ? `${flag}=` : undefined;
  if (attached === undefined || word.length <= attached.length || !word.startsWith(attached)) return undefined;
  return passwordIn(text, { start: w.start + attached.length, end: w.end }, rule, false);
}

/** The passwords that `rule` finds in the words after a program name. */
function passwordsFor(text: string, words: Span[], rule: ClientRule): Span[] {
  const raw = words.map((w) => text.slice(w.start, w.end));
  const from = rule.sub ? raw.findIndex((w) => rule.sub!.includes(w)) + 1 : 0;
  if (from === 0 && rule.sub) return [];
  const found: Span[] = [];
  for (let i = from; i < words.length; i++) {
    for (const flag of rule.flags ?? []) {
      const v = optionValue(text, words, i, flag, rule);
      if (v) found.push(v);
    }
  }
  const at = rule.positional?.(raw.slice(from));
  const word = at === undefined ? undefined : words[from + at];
  const v = word && passwordIn(text, word, rule, false);
  if (v) found.push(v);
  return found;
}

/** `text` with the passwords given to known clients redacted (the option and any quotes stay). */
export function redactClientPasswords(text: string): string {
  const spans: Span[] = [];
  PROGRAM_RE.lastIndex = 0;
  for (let m = PROGRAM_RE.exec(text); m !== null; m = PROGRAM_RE.exec(text)) {
    if (!startsWord(text, m.index)) continue;
    const words = commandWords(text, m.index + m[0].length);
    for (const rule of BY_PROGRAM.get(m[0])!) spans.push(...passwordsFor(text, words, rule));
  }
  return replaceSpans(text, spans);
}
