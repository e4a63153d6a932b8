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
  [
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
  ],
  ["the token budget is 150000", "the token budget is 150000"],
  ["https://example.com/path?q=1", "https://example.com/path?q=1"],
  ["git@github.com:org/repo.git", "git@github.com:org/repo.git"],
  ["task-runner sk-learn is a typo", "task-runner sk-learn is a typo"],
  ["commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904", "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"],
];

/** Vendor prefixes are joined at run time (no file of the repository matches a credential scanner). */
const GHP = ["gh", "p_"].join("");
const SKP = ["sk", "-proj-"].join("");
const HEX32 = "0123456789abcdef0123456789abcdef";
const SID = ["A", "C"].join("") + HEX32;

/** Client passwords, wrapped tokens, unnamed SDK secrets and key files: [input, expected]. What stays is mapped to itself. */
const LATE_CASES: Array<[string, string]> = [
  ["mysql -uroot -pS3cr3tPass db", `mysql -uroot -p${R} db`],
  ["mysql -u root -p'hunter2xyz'", `mysql -u root -p'${R}'`],
  // separate, a password only when it looks like one: otherwise it is the database (`-p` prompts)
  ["mysql -h db -u root -p S3cr3tPass1 shop", `mysql -h db -u root -p ${R} shop`],
  ["mysql -u root -p shop", "mysql -u root -p shop"],
  ["mysql -u root -p app_db2 < dump.sql", "mysql -u root -p app_db2 < dump.sql"],
  ['mysql -uroot -p"$MYSQL_PWD" db', 'mysql -uroot -p"$MYSQL_PWD" db'],
  ["mysql -u root \\\n  -pS3cr3tPass db", `mysql -u root \\\n  -p${R} db`],
  ["docker exec -it db mysql -uroot -pS3cr3tPass", `docker exec -it db mysql -uroot -p${R}`],
  // in JSON: the value ends where the string does, the structure stays
  ['{"cmd":"mysql -uroot -pS3cr3tPass","cwd":"/w"}', `{"cmd":"mysql -uroot -p${R}","cwd":"/w"}`],
  ['"docker login -u bob -p \\"Pa55word!\\" reg"', `"docker login -u bob -p \\"${R}\\" reg"`],
  ["docker login -u bob -p 'Pa55word!' registry.example.com", `docker login -u bob -p '${R}' registry.example.com`],
  ["docker run -p 8080:80 -u bob nginx", "docker run -p 8080:80 -u bob nginx"],
  ["docker login -u bob --password-stdin reg", "docker login -u bob --password-stdin reg"],
  ['sshpass -p "secretpw1" ssh host', `sshpass -p "${R}" ssh host`],
  ["ssh -p 2222 host && scp -P 2222 f host:", "ssh -p 2222 host && scp -P 2222 f host:"],
  [
    "mongosh -u admin -p s3cretPw --authenticationDatabase admin",
    `mongosh -u admin -p ${R} --authenticationDatabase admin`,
  ],
  ["redis-cli -a myRedisPass123", `redis-cli -a ${R}`],
  ['redis-cli -p 6379 -a "$REDIS_PASS" ping', 'redis-cli -p 6379 -a "$REDIS_PASS" ping'],
  ["curl -u user:pw https://x", `curl -u user:${R} https://x`],
  ["curl -u user https://x", "curl -u user https://x"],
  ["psql postgres://user:pw@host/db", `psql postgres://user:${R}@host/db`],
  ["htpasswd -nb admin s3cret", `htpasswd -nb admin ${R}`],
  ["smbclient //fs/share -U 'bob%pa ss'", `smbclient //fs/share -U 'bob%${R}'`],
  ["git log -p -3 && run mysql -p to be prompted", "git log -p -3 && run mysql -p to be prompted"],
  ["docker login -p is deprecated, sshpass -p also", "docker login -p is deprecated, sshpass -p also"],
  // wrapped by a terminal: both parts go, the line break stays
  [`${GHP}ABCDEFGHIJKLMNOPQR\nSTUVWXYZ0123456789ab`, `${R}\n${R}`],
  [`"${GHP}ABCDEFGHIJKLMNOPQR\\nSTUVWXYZ0123456789ab"`, `"${R}\\n${R}"`],
  [`${GHP}ABCDEFGHIJKLMNOPQR\r\nSTUVWXYZ0123456789ab ok`, `${R}\r\n${R} ok`],
  [
    `key ${SKP}Ab3dEf6hIj9kLm2nOp5q\nRs8tUv1wXy4zAb3dEf6hIj9kLm2nOp5qRs8tUv1w\nXy4zAb3d done`,
    `key ${R}\n${R}\n${R} done`,
  ],
  // a whole token at a line's end: the next line's word is not part of it
  [`${GHP}ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\nDone`, `${R}\nDone`],
  [
    `the token starts with ${GHP} and\nis 40 characters long`,
    `the token starts with ${GHP} and\nis 40 characters long`,
  ],
  // an unnamed 32-hex secret passed to a call; digests elsewhere stay
  [`client = Client("${SID}", "${HEX32}")`, `client = Client("${SID}", "${R}")`],
  [`assert.equal(md5(buf), "${HEX32}")`, `assert.equal(md5(buf), "${HEX32}")`],
  [`${HEX32}  dist/relay.tar.gz`, `${HEX32}  dist/relay.tar.gz`],
  [
    `ids = ["${HEX32}", "${HEX32}"]; u = uuid.UUID("${HEX32}")`,
    `ids = ["${HEX32}", "${HEX32}"]; u = uuid.UUID("${HEX32}")`,
  ],
  // PuTTY key: the header and public lines stay
  [
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIGx1\nPrivate-Lines: 2\nAAAAIQCq9z3Lk0TfW2n8Xr\nYb7Q1mK4pZs=\nPrivate-MAC: 5f2b8e0c9a7d4e1f3b6a8c0d2e4f6a8b",
    `PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIGx1\nPrivate-Lines: 2\n${R}\nPrivate-MAC: ${R}`,
  ],
  // a dot-named key (a file in a Kubernetes secret) with a base64 value
  ["data:\n  .dockerconfigjson: eyJhdXRocyI6eyJyZWcuZXhhbXBsZS5jb20iOnt9fX0=", `data:\n  .dockerconfigjson: ${R}`],
  ["  .nvmrc: v20.11.1\n  .gitignore: node_modules", "  .nvmrc: v20.11.1\n  .gitignore: node_modules"],
];

describe("redactSecrets: client passwords, wrapped tokens, SDK secrets, key files", () => {
  for (const [input, expected] of LATE_CASES) {
    test(JSON.stringify(input.slice(0, 60)), () => {
      assert.equal(redactSecrets(input), expected);
    });
  }
  test("is idempotent", () => {
    for (const [input] of LATE_CASES) assert.equal(redactSecrets(redactSecrets(input)), redactSecrets(input));
  });
});

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
