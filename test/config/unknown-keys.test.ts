/**
 * Unknown-key warnings read from the generated key tree are the ones the schema's shapes give,
 * and reading config.toml (and overriding it from flags) builds no zod schema at all: this file
 * runs in a process of its own, so the count of built schemas starts from what it imports.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { applyOverrides, parseConfig, RelayConfigSchema } from "../../src/config/config.ts";
import { relayConfigKeys } from "../../src/config/config-checks.generated.ts";
import { keyTreeOf, unknownKeys, unknownKeysIn } from "../../src/config/unknown-keys.ts";
import { lazySchemasBuilt } from "../../src/util/lazy-schema.ts";
import { schemasBuiltElsewhere } from "../support/skip.ts";

const CONFIG = `
model = "gpt-test"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
codex_provider_id = "local"
approval_policy = "never"
aproval_policy = "never"
constructor = 1
[shell]
login = false
logn = true
[infty.roles.solver]
model = "m"
base_url = "https://example.com/v1"
modle = "x"
[infty.roles.judge]
model = "m"
`;

/** Schemas built before this file's tests ran: none where the file has a global of its own. */
const builtAtStart = lazySchemasBuilt();

describe("unknown keys from the generated key tree", () => {
  test("config.toml with a base URL, a key variable and unknown keys, then flags over it: no schema is built", {
    skip: schemasBuiltElsewhere(builtAtStart),
  }, () => {
    const before = lazySchemasBuilt();
    const loaded = parseConfig(CONFIG, "config.toml");
    assert.ok("ok" in loaded, JSON.stringify(loaded));
    assert.equal(loaded.ok.config.api_key_env, "LOCAL_KEY");
    assert.deepEqual(loaded.ok.warnings, [
      'config.toml: unknown key "aproval_policy" ignored (did you mean "approval_policy"?)',
      'config.toml: unknown key "constructor" ignored',
      'config.toml: unknown key "shell.logn" ignored (did you mean "shell.login"?)',
      'config.toml: unknown key "infty.roles.solver.modle" ignored (did you mean "infty.roles.solver.model"?)',
      'config.toml: unknown key "infty.roles.judge" ignored',
    ]);
    const over = applyOverrides(loaded.ok.config, { model: "other", base_url: "http://localhost:1/v1" });
    assert.ok("ok" in over);
    assert.equal(over.ok.base_url, "http://localhost:1/v1");
    assert.equal(lazySchemasBuilt(), before);
    // A refused value still gets zod's message, which builds the schema: the count moves.
    const refused = applyOverrides(loaded.ok.config, { base_url: "ftp://example.com" });
    assert.ok("error" in refused && /http:\/\/ or https:\/\//.test(refused.error.message));
    assert.ok(lazySchemasBuilt() > before);
  });

  test("the generated tree is the schema's, and reads the same warnings", () => {
    assert.deepEqual(relayConfigKeys, keyTreeOf(RelayConfigSchema));
    for (const raw of [
      { modle: 1, shell: { pth: "/bin/sh" }, sandbox: { mechanism: "landlock", extra: 1 } },
      { infty: { roles: { director: { modl: "x" } }, dbb: "" }, mcp_servers: { a: { anything: 1 } } },
      { __proto__: { x: 1 }, hasOwnProperty: 1, exec: [1, 2] },
    ])
      assert.deepEqual(unknownKeysIn(relayConfigKeys, raw, ""), unknownKeys(RelayConfigSchema, raw, ""));
  });
});
