import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { REDACTED, redactSecrets } from "../../src/util/redact.ts";

const R = REDACTED;

/** [input, expected] */
const CASES: Array<[string, string]> = [
  // the four classic rules and their vectors
  ["key sk-abcdefghij0123456789 end", `key ${R} end`],
  // no digit: not a random key body (sk-learn-style words)
  ["key sk-abcdefghijklmnopqrst end", "key sk-abcdefghijklmnopqrst end"],
  ["bEaReR a1b2c3d4e5f6g7h8", `bEaReR ${R}`],
  ['password: "abcdefgh"', `password: "${R}"`],
  ["Bearer short", "Bearer short"],
  // a password is short: 4 characters are enough; 3 are not
  ["password=short", `password=${R}`],
  ["password=abc", "password=abc"],
  ["sk-short", "sk-short"],
  ["", ""],
  ["AKIAIOSFODNN7EXAMPLE in config", `${R} in config`],
  ["api_key=0123456789abcdef", `api_key=${R}`],
  ["API-KEY: 'zq81xk2mwp4t'", `API-KEY: '${R}'`],
  // one repeated character is a mask, not a key
  ["API-KEY: 'zzzzzzzzzzzz'", "API-KEY: 'zzzzzzzzzzzz'"],
  ["apikey = qwertyuiop", `apikey = ${R}`],
  ["token: abcdefgh12345678", `token: ${R}`],
  ["secret=hunter2hunter2", `secret=${R}`],
  // prefixed assignment names
  ["GITHUB_TOKEN=ghx_notatoken_butlong", `GITHUB_TOKEN=${R}`],
  ["OPENAI_API_KEY=whatever-value-123", `OPENAI_API_KEY=${R}`],
  ["client_secret: abcdefghijkl", `client_secret: ${R}`],
  ["DB_PASSWORD='p@ssw0rd!!'", `DB_PASSWORD='${R}'`],
  // provider-specific tokens
  ["sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345", R],
  ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz", R],
  [`use ghp_${"a".repeat(36)} now`, `use ${R} now`],
  [`github_pat_${"A1".repeat(20)}`, R],
  [`glpat-${"x".repeat(20)}`, R],
  ["xoxb-1234567890-abcdefghij", R],
  ["https://hooks.slack.com/services/T000/B000/XXXXXXXX", R],
  [`//registry.npmjs.org/:_authToken=npm_${"a".repeat(36)}`, `//registry.npmjs.org/:_authToken=${R}`],
  [`npm_${"b".repeat(36)}`, R],
  [`AIza${"c".repeat(35)}`, R],
  [`sk_live_${"d".repeat(24)}`, R],
  [`rk_test_${"e".repeat(24)}`, R],
  ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", R],
  // headers
  ["Authorization: Bearer abcdef0123456789xyz", `Authorization: Bearer ${R}`],
  ["authorization: Basic dXNlcjpwYXNzd29yZA==", `authorization: Basic ${R}`],
  ['curl -H "Authorization: Bearer a1b2c3d4e5f6g7h8i9j0" https://x', `curl -H "Authorization: Bearer ${R}" https://x`],
  // passwords in URLs
  ["postgres://app:s3cretpw@db.local:5432/prod", `postgres://app:${R}@db.local:5432/prod`],
  ["git clone https://user:tok123@github.com/o/r.git", `git clone https://user:${R}@github.com/o/r.git`],
  // an empty user still has a password
  ["redis://:pw@localhost:6379", `redis://:${R}@localhost:6379`],
  ["mongodb+srv://admin:Hunter2Hunter2@cluster0.example.net/db", `mongodb+srv://admin:${R}@cluster0.example.net/db`],
  // private keys
  ["-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----", R],
  ["x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\ny", `x\n${R}\ny`],
  ["-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----", R],
  ["-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ\n-----END PGP PRIVATE KEY BLOCK-----", R],
  // things that must stay
  ["-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"],
  ["the token budget is 150000", "the token budget is 150000"],
  ["https://example.com/path?q=1", "https://example.com/path?q=1"],
  ["git@github.com:org/repo.git", "git@github.com:org/repo.git"],
  ["task-runner sk-learn is a typo", "task-runner sk-learn is a typo"],
  ["commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904", "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"],
];

describe("redactSecrets", () => {
  test(`has a corpus of at least 30 cases (${CASES.length})`, () => {
    assert.ok(CASES.length >= 30);
  });
  for (const [input, expected] of CASES) {
    test(JSON.stringify(input.slice(0, 60)), () => {
      assert.equal(redactSecrets(input), expected);
    });
  }
  test("is idempotent", () => {
    for (const [input] of CASES) assert.equal(redactSecrets(redactSecrets(input)), redactSecrets(input));
  });
});
