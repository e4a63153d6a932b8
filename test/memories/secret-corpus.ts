/**
 * Realistic FAKE secrets, generated at run time. Every vendor prefix is built by concatenation so
 * that no file in the repository matches a credential pattern (push protection, scanners).
 */

import { clientSecretCases } from "./secret-corpus-clients.ts";
import { ALNUM, B64, DIGITS, HEX, LOWER, p, password, rand, UPPER, URLSAFE } from "./secret-rand.ts";

export { rand };

export interface SecretCase {
  kind: string;
  /** The sensitive value. */
  secret: string;
  /** A line as it would appear in a prompt, a command, tool output or model text. */
  text: string;
  /** Similar-looking text without a secret, which redaction must leave unchanged. */
  keep?: string[];
}

function pem(label: string, lines: number, withEnd = true): { secret: string; text: string } {
  const body = Array.from({ length: lines }, () => rand(B64, 64));
  const name = p(label ? `${label} ` : "", "PRIVATE", " KEY-----");
  const begin = p("-----BEGIN ", name);
  const end = p("-----END ", name);
  const text = [begin, ...body, ...(withEnd ? [end] : [])].join("\n");
  return { secret: body.join("\n"), text };
}

/** The secrets and how they appear. At least 50 (the corpus test checks the count). */
export function secretCorpus(): SecretCase[] {
  const out: SecretCase[] = [];
  const add = (kind: string, secret: string, text: string) => out.push({ kind, secret, text });

  const akia = p("AK", "IA", rand(UPPER + DIGITS, 16));
  add("aws access key id (AKIA)", akia, `aws configure set aws_access_key_id ${akia}`);
  const asia = p("AS", "IA", rand(UPPER + DIGITS, 16));
  add(
    "aws session key id (ASIA) in JSON",
    asia,
    `{"Credentials": {"AccessKeyId": "${asia}", "Expiration": "2030-01-01T00:00:00Z"}}`,
  );
  const s1 = rand(B64, 40);
  add("aws secret in credentials file", s1, `[default]\naws_secret_access_key = ${s1}`);
  const s2 = rand(B64, 40);
  add("aws secret in JSON", s2, `"SecretAccessKey": "${s2}",`);
  const s3 = rand(B64, 40);
  add("aws secret exported", s3, `export AWS_SECRET_ACCESS_KEY=${s3}`);
  const s4 = rand(B64, 40);
  add("aws secret bare (CSV)", s4, `Access key ID,Secret access key\nAKIDEXAMPLEONLY,${s4}`);
  const s5 = rand(B64, 40);
  add("aws secret bare in prose", s5, `the new key is ${s5} (rotate it monthly)`);

  const ghp = p("gh", "p_", rand(ALNUM, 36));
  add("github classic token in a remote URL", ghp, `git remote set-url origin https://${ghp}@github.com/acme/api.git`);
  const gho = p("gh", "o_", rand(ALNUM, 36));
  add("github oauth token in prose", gho, `my gh token is ${gho} if you need it`);
  const ghu = p("gh", "u_", rand(ALNUM, 36));
  add("github user-to-server token", ghu, `GH_TOKEN=${ghu} gh pr list`);
  const ghs = p("gh", "s_", rand(ALNUM, 36));
  add("github installation token in a URL password", ghs, `https://x-access-token:${ghs}@github.com/acme/api.git`);
  const ghr = p("gh", "r_", rand(ALNUM, 36));
  add("github refresh token", ghr, `refresh: ${ghr}`);
  const pat = p("github", "_pat_", rand(ALNUM, 22), "_", rand(ALNUM, 59));
  add("github fine-grained PAT", pat, `echo ${pat} | gh auth login --with-token`);
  const glpat = p("gl", "pat-", rand(URLSAFE, 20));
  add(
    "gitlab PAT in a header",
    glpat,
    `curl --header "PRIVATE-TOKEN: ${glpat}" https://gitlab.example.com/api/v4/projects`,
  );

  const xoxb = p("xo", "xb-", rand(DIGITS, 12), "-", rand(DIGITS, 13), "-", rand(ALNUM, 24));
  add("slack bot token", xoxb, `SLACK_BOT=${xoxb}`);
  const xoxp = p("xo", "xp-", rand(DIGITS, 12), "-", rand(DIGITS, 12), "-", rand(DIGITS, 13), "-", rand(HEX, 32));
  add("slack user token in prose", xoxp, `use ${xoxp} for the export`);
  const xapp = p("xa", "pp-1-", rand(UPPER + DIGITS, 11), "-", rand(DIGITS, 13), "-", rand(HEX, 64));
  add("slack app token", xapp, `app token ${xapp}`);
  const hook = p(
    "https://hooks",
    ".slack.com/services/T",
    rand(UPPER + DIGITS, 8),
    "/B",
    rand(UPPER + DIGITS, 8),
    "/",
    rand(ALNUM, 24),
  );
  add("slack webhook URL", hook, `curl -X POST -d '{"text":"hi"}' ${hook}`);

  const sk = p("s", "k-", rand(ALNUM, 48));
  add("openai legacy key", sk, `OPENAI_KEY_OLD ${sk}`);
  const proj = p("sk", "-proj-", rand(URLSAFE, 74), "T3Blbk", "FJ", rand(URLSAFE, 74));
  add("openai project key", proj, `client = OpenAI(api_key="${proj}")`);
  const ant = p("sk", "-ant-", "api03-", rand(URLSAFE, 93), "AA");
  add("anthropic key", ant, `x-api-key: ${ant}`);
  const svc = p("sk", "-svcacct-", rand(URLSAFE, 64));
  add("openai service account key", svc, `the service key: ${svc}`);

  const aiza = p("AI", "za", rand(URLSAFE, 35));
  add("google api key in a URL", aiza, `https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${aiza}`);
  const ya29 = p("ya", "29.", rand(URLSAFE, 120));
  add("google oauth access token", ya29, `access token ${ya29}`);
  const refresh = p("1/", "/0", rand(URLSAFE, 60));
  add("google oauth refresh token", refresh, `"refresh_token": "${refresh}"`);

  const live = p("sk", "_live_", rand(ALNUM, 24));
  add("stripe secret key", live, `stripe.api_key = '${live}'`);
  const rk = p("rk", "_live_", rand(ALNUM, 24));
  add("stripe restricted key", rk, `restricted ${rk}`);
  const whsec = p("wh", "sec_", rand(ALNUM, 32));
  add("stripe webhook secret", whsec, `STRIPE_WEBHOOK=${whsec}`);

  const b64url = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const jwt = [
    b64url({ alg: "HS256", typ: "JWT" }),
    b64url({ sub: rand(DIGITS, 10), name: "x", iat: 1700000000 }),
    rand(URLSAFE, 43),
  ].join(".");
  add("JWT in prose", jwt, `session jwt ${jwt}`);
  const jwt2 = [
    b64url({ alg: "RS256", kid: rand(HEX, 8) }),
    b64url({ sub: rand(DIGITS, 8), scope: "admin" }),
    rand(URLSAFE, 86),
  ].join(".");
  add("JWT as a bearer token", jwt2, `curl -H "Authorization: Bearer ${jwt2}" https://api.example.com/v1/me`);

  const rsa = pem("RSA", 6);
  add("PEM RSA private key", rsa.secret, rsa.text);
  const ossh = pem("OPENSSH", 4);
  add("PEM OpenSSH private key", ossh.secret, `cat ~/.ssh/id_ed25519\n${ossh.text}`);
  const trunc = pem("EC", 3, false);
  add("PEM EC private key cut off (no END line)", trunc.secret, `${trunc.text}\n[output truncated]`);
  const gcp = pem("", 4);
  add(
    "PEM inside JSON (escaped newlines)",
    gcp.secret.split("\n").join("\\n"),
    `{"type": "service_account", "private_key": "${gcp.text.split("\n").join("\\n")}\\n"}`,
  );

  const pw1 = password();
  add("env password", pw1, `DB_PASSWORD=${pw1}`);
  const pw2 = password(10);
  add("YAML passwd", pw2, `database:\n  user: app\n  passwd: ${pw2}\n`);
  const tok = rand(ALNUM, 20);
  add("YAML token", tok, `  token: ${tok}`);
  const apiKey = rand(HEX, 32);
  add("api_key assignment (hex)", apiKey, `api_key=${apiKey}`);
  const secret = rand(ALNUM, 18);
  add("secret assignment", secret, `secret="${secret}"`);
  const phrase = [rand(LOWER, 6) + rand(DIGITS, 1), rand(LOWER, 7), rand(LOWER, 5) + rand(DIGITS, 2)].join(" ");
  add("JSON password with spaces", phrase, `{"username": "ops", "password": "${phrase}"}`);
  const escaped = password(16);
  add("escaped JSON password", escaped, `"{\\"password\\":\\"${escaped}\\"}"`);
  const pw3 = password(12);
  add("--password flag", pw3, `mysql --host db --user root --password ${pw3} prod`);
  const tok2 = rand(ALNUM, 24);
  add("--token flag", tok2, `vault login --token ${tok2}`);
  const key3 = rand(ALNUM, 32);
  add("--api-key= flag", key3, `./deploy --api-key=${key3} --env prod`);
  const pw4 = password(12);
  add("curl -u user:password", pw4, `curl -u admin:${pw4} https://jenkins.example.com/api/json`);
  const short = rand(LOWER, 4) + rand(DIGITS, 3);
  add("short password", short, `PGPASSWORD=${short} psql -h db -U app`);

  const pg = password(14);
  add("postgres URL password", pg, `DATABASE_URL=postgres://app:${pg}@db.internal:5432/prod`);
  const mongo = password(16);
  add("mongodb+srv URL password", mongo, `mongodb+srv://admin:${mongo}@cluster0.example.net/db`);
  const redis = password(12);
  add("redis URL password without user", redis, `redis://:${redis}@cache:6379/0`);
  const at = `${rand(ALNUM, 6)}@${rand(ALNUM, 6)}`;
  add("URL password with an unencoded @", at, `https://deploy:${at}@registry.example.com/v2/`);

  const opaque = rand(URLSAFE, 32);
  add("Authorization: Bearer opaque", opaque, `Authorization: Bearer ${opaque}`);
  const basic = Buffer.from(`admin:${password(12)}`).toString("base64");
  add("Authorization: Basic", basic, `-H 'authorization: Basic ${basic}'`);
  const ghtok = rand(HEX, 40);
  add("Authorization: token (hex)", ghtok, `"Authorization": "token ${ghtok}"`);
  const xkey = rand(ALNUM, 40);
  add("X-Api-Key header", xkey, `X-Api-Key: ${xkey}`);

  const signing = rand(B64, 44);
  add("high-entropy value next to a *_KEY name", signing, `SIGNING_KEY=${signing}`);
  const cookie = rand(HEX, 48);
  add("session cookie", cookie, `Cookie: theme=dark; session=${cookie}`);
  const cs = rand(URLSAFE, 30);
  add("client_secret in JSON", cs, `{"client_id": "app-1", "client_secret": "${cs}"}`);
  const acct = rand(B64, 86) + "==";
  add(
    "Azure connection string AccountKey",
    acct,
    `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${acct};EndpointSuffix=core.windows.net`,
  );
  const npmTok = p("np", "m_", rand(ALNUM, 36));
  add("npm token in .npmrc", npmTok, `//registry.npmjs.org/:_authToken=${npmTok}`);
  const hf = p("h", "f_", rand(UPPER + LOWER, 34));
  add("hugging face token", hf, `huggingface-cli login ${hf}`);
  const sg = p("S", "G.", rand(URLSAFE, 22), ".", rand(URLSAFE, 43));
  add("sendgrid key", sg, `sendgrid ${sg}`);
  const dckr = p("dckr", "_pat_", rand(URLSAFE, 27));
  add("docker hub PAT", dckr, `docker hub pat ${dckr}`);
  const netrc = password(14);
  add(".netrc password", netrc, `machine api.example.com login deploy password ${netrc}`);
  const xml = password(14);
  add("XML password element", xml, `<server><id>nexus</id><password>${xml}</password></server>`);
  const camel = rand(ALNUM, 28);
  add("camelCase accessToken", camel, `const cfg = { accessToken: "${camel}" };`);
  return [...out, ...clientSecretCases()];
}

/**
 * What must never appear: the secret, and a 12-character slice of it (a partial leak after a
 * truncation), compared case-insensitively and with separators dropped (slugs and file stems
 * lowercase text and turn punctuation into `-` or `_`).
 */
export function fragmentsOf(c: SecretCase): string[] {
  const norm = normalize(c.secret);
  const frags = new Set<string>();
  // A phrase can leak one word at a time.
  for (const w of c.secret.split(/\s+/)) if (w !== c.secret && normalize(w).length >= 6) frags.add(normalize(w));
  if (norm.length <= 16) frags.add(norm);
  else for (const at of [0, Math.floor(norm.length / 2) - 6, norm.length - 12]) frags.add(norm.slice(at, at + 12));
  return [...frags];
}

/** Lowercase letters and digits only. */
export function normalize(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]/g, "");
}

export interface Leak {
  kind: string;
  fragment: string;
  where: string;
}

/** Every (secret, place) pair where a fragment of the secret shows up. */
export function findLeaks(cases: SecretCase[], places: Array<{ where: string; text: string }>): Leak[] {
  const leaks: Leak[] = [];
  const hay = places.map((pl) => ({ where: pl.where, norm: normalize(pl.text) }));
  for (const c of cases) {
    for (const f of fragmentsOf(c)) {
      for (const h of hay) if (h.norm.includes(f)) leaks.push({ kind: c.kind, fragment: f, where: h.where });
    }
  }
  return leaks;
}
