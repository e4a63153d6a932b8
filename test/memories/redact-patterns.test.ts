/** Redaction rules against the generated secret corpus, its JSON forms, and ordinary text that must stay. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { safeRelativePath } from "../../src/memories/redact-files.ts";
import { REDACTED, redactDeep, redactSecrets, safeSlug } from "../../src/util/redact.ts";
import { looksLikeAwsSecret, looksRandom, nameKind } from "../../src/util/secret-shape.ts";
import { findLeaks, rand, secretCorpus } from "./secret-corpus.ts";
import { clientSecretCases } from "./secret-corpus-clients.ts";

const ROUNDS = 10;
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function leaksIn(transform: (text: string) => string): string[] {
  const out: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of secretCorpus()) {
      const red = transform(c.text);
      for (const l of findLeaks([c], [{ where: "out", text: red }]))
        out.push(`${l.kind}: ${JSON.stringify(red).slice(0, 200)}`);
    }
  }
  return [...new Set(out)];
}

describe("redaction: the secret corpus", () => {
  test("has at least 50 kinds of secret", () => {
    assert.ok(secretCorpus().length >= 50, `only ${secretCorpus().length}`);
  });

  test("client passwords, wrapped tokens and the other late kinds each come with a look-alike that must stay", () => {
    const cases = clientSecretCases();
    assert.ok(cases.length >= 45, `only ${cases.length}`);
    assert.deepEqual(
      cases.filter((c) => !c.keep?.length).map((c) => c.kind),
      [],
    );
  });

  test(`every look-alike, ${ROUNDS} fresh draws each, comes out unchanged`, () => {
    const changed: string[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const c of secretCorpus())
        for (const k of c.keep ?? [])
          if (redactSecrets(k) !== k) changed.push(`${c.kind}: ${JSON.stringify(redactSecrets(k)).slice(0, 200)}`);
    }
    assert.deepEqual([...new Set(changed)], []);
  });

  test(`every case, ${ROUNDS} fresh draws each: no secret or 12-char slice survives`, () => {
    assert.deepEqual(leaksIn(redactSecrets), []);
  });

  test("inside JSON strings (tool output that prints JSON, escaped quotes and newlines)", () => {
    assert.deepEqual(
      leaksIn((t) => redactSecrets(JSON.stringify({ output: t }))),
      [],
    );
  });

  test("all cases in one document, and as tool-call arguments through redactDeep", () => {
    const cases = secretCorpus();
    const doc = cases.map((c, i) => `step ${i}: ${c.text}`).join("\n\n");
    assert.deepEqual(findLeaks(cases, [{ where: "doc", text: redactSecrets(doc) }]), []);
    const item = {
      type: "function_call",
      name: "exec_command",
      arguments: JSON.stringify({ cmd: doc, env: { NOTE: doc } }),
    };
    const red = redactDeep(item);
    assert.deepEqual(findLeaks(cases, [{ where: "arguments", text: red.arguments }]), []);
    assert.equal(JSON.parse(red.arguments).cmd, redactSecrets(doc), "arguments stay valid JSON, redacted leaf by leaf");
  });

  test("redaction is idempotent and keeps the name, scheme and user", () => {
    for (const c of secretCorpus()) assert.equal(redactSecrets(redactSecrets(c.text)), redactSecrets(c.text), c.kind);
    const pw = `Zq${rand(B64.slice(0, 62), 10)}`;
    assert.equal(redactSecrets(`DB_PASSWORD=${pw}`), `DB_PASSWORD=${REDACTED}`);
    assert.equal(redactSecrets(`postgres://app:${pw}@db:5432/x`), `postgres://app:${REDACTED}@db:5432/x`);
    assert.equal(redactSecrets(`{"password": "${pw}"}`), `{"password": "${REDACTED}"}`);
    assert.equal(redactSecrets(`mysql --password ${pw} db`), `mysql --password ${REDACTED} db`);
    assert.equal(redactSecrets(`Authorization: Basic ${pw}`), `Authorization: Basic ${REDACTED}`);
  });
});

/** Ordinary text that must come out unchanged. */
const KEEP: string[] = [
  "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
  "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist/relay",
  "git checkout 3f2a9c1 && git log --oneline -3",
  "thread 0194f5a6-89ab-7cde-8123-456789abcdef, request-id: 550e8400-e29b-41d4-a716-446655440000",
  "session_id: 550e8400-e29b-41d4-a716-446655440000",
  "/home/user/projects/relay/src/memories/redact.ts:12:3",
  "AbstractSingletonProxyFactoryBean1234567 is a class",
  "see src/Session/Rollout/Writer/Something12 for details",
  "echo aGVsbG8gd29ybGQ= | base64 -d",
  "https://example.com/path?q=1&page=2#frag",
  "ssh://git@github.com/org/repo.git and git@github.com:org/repo.git",
  "redis://localhost:6379/0",
  "postgres://app:***@db.local:5432/prod",
  "password: string;",
  "  token: options.token,",
  "apiKey: process.env.OPENAI_API_KEY,",
  "const token = getToken();",
  "password = request.form['password']",
  "self.password = password",
  "if password == expected:",
  "PASSWORD=$DB_PASSWORD ./run.sh",
  "password: ${{ secrets.DB_PASSWORD }}",
  'api_key_env = "OPENAI_API_KEY"',
  "api_key: <your-api-key>",
  "max_tokens: 4096",
  "token_count: 12345678",
  "password_min_length: 12",
  "token_type: bearer",
  '{"token_type": "Bearer", "expires_in": 3600}',
  "secret_name: tls-cert",
  "kind: Secret",
  "PWD=/home/user/project OLDPWD=/tmp",
  "echo $PASS | docker login --username me --password-stdin",
  "the bearer of bad news",
  "Bearer token auth is configured",
  "Authorization: Bearer $TOKEN",
  "key: my-config-value",
  "sort_key: created_at",
  "ssh_key: ~/.ssh/id_ed25519",
  "docker run --user 1000:1000 image",
  "the token budget is 150000",
  "task-runner sk-learn-compatible-estimators",
  "version: 1.2.3",
  "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
  "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
  "Cookie: theme=dark; lang=en",
  "AWS_REGION=us-east-1 aws_access_key_id = AKIDEXAMPLEONLY",
  `already ${REDACTED} here`,
  "Reset your password in the settings page.",
  "Token: required",
  "git push --force-with-lease origin main",
];

describe("redaction: ordinary text stays", () => {
  for (const text of KEEP) {
    test(JSON.stringify(text.slice(0, 70)), () => {
      assert.equal(redactSecrets(text), text);
    });
  }

  test("base64 blobs: integrity hashes and long key material without a name stay", () => {
    const integrity = `"integrity": "sha512-${rand(B64, 86)}=="`;
    assert.equal(redactSecrets(integrity), integrity);
    const sshPub = `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${rand(B64, 43)} me@host`;
    assert.equal(redactSecrets(sshPub), sshPub);
  });

  test("40-character shapes: only random base64 counts as a bare AWS secret", () => {
    let caught = 0;
    for (let i = 0; i < 2000; i++) if (looksLikeAwsSecret(rand(B64, 40))) caught++;
    assert.ok(caught >= 1990, `random base64-40 caught ${caught}/2000`);
    for (const s of [
      "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
      "AbstractSingletonProxyFactoryBean1234567",
      "src/session/rollout/writer/SomeThing1234",
      "src/Memories/Rollout/Writer/Phase2Test12",
    ]) {
      assert.equal(s.length, 40, s);
      assert.equal(looksLikeAwsSecret(s), false, s);
    }
  });

  test("documented over-redaction: a hex digest next to a *_key name goes", () => {
    const sha = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    assert.equal(redactSecrets(`cache_key: ${sha}`), `cache_key: ${REDACTED}`);
  });
});

describe("redaction helpers", () => {
  test("name kinds", () => {
    const cases: Array<[string, string]> = [
      ["DB_PASSWORD", "strong"],
      ["SecretAccessKey", "strong"],
      ["x-api-key", "strong"],
      ["_authToken", "strong"],
      ["accessToken", "strong"],
      ["MYSQL_PWD", "strong"],
      ["PWD", "none"],
      ["token_count", "none"],
      ["secret_name", "none"],
      ["max_tokens", "none"],
      ["SIGNING_KEY", "weak"],
      ["session", "weak"],
      ["primary_key", "weak"],
      ["description", "none"],
    ];
    for (const [name, kind] of cases) assert.equal(nameKind(name), kind, name);
  });

  test("looksRandom: digests and tokens yes; words, dates, versions no", () => {
    for (const s of ["9f86d081884c7d659a2feaa0c55ad015", "550e8400-e29b-41d4-a716-446655440000", rand(B64, 24)])
      assert.ok(looksRandom(s), s);
    for (const s of ["my-config-value-name", "v1.2.3", "responsibilities", "2024-01-15"]) assert.ok(!looksRandom(s), s);
  });

  test("safeSlug drops markers and random-looking words; file names lose secrets", () => {
    const tok = ["gh", "p_", rand(B64.slice(0, 62), 36)].join("");
    assert.equal(safeSlug(`deploy-with-${tok}`), "deploy-with");
    assert.equal(safeSlug(`${tok}-then-deploy`), "then-deploy");
    assert.equal(safeSlug("fix-login-a1b2c3d4e5f6g7h8"), "fix-login");
    assert.equal(safeSlug(" Fix Parser!"), "Fix Parser!", "an ordinary slug is only trimmed");
    assert.equal(safeSlug("fixed-parser"), "fixed-parser");
    assert.equal(safeSlug(REDACTED), null);
    assert.equal(safeRelativePath(`notes/${tok}.md`), "notes/REDACTED.md");
    assert.equal(
      safeRelativePath("rollout_summaries/2025-01-01T00-00-00-abcd-fix.md"),
      "rollout_summaries/2025-01-01T00-00-00-abcd-fix.md",
    );
  });
});
