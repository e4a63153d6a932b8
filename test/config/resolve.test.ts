/**
 * config/resolve.ts and config/selection.ts: the one order settings are decided in (the file, a
 * role's section, what a resume recorded, the flags) and what a session selects (roots,
 * environments, its executor's name), with the refusals a bad flag gets.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { capabilityRoot } from "../../src/config/capability-root.ts";
import { parseConfig, type RelayConfig } from "../../src/config/config.ts";
import { resolveConfig } from "../../src/config/resolve.ts";
import { resolveSelection } from "../../src/config/selection.ts";
import type { Result } from "../../src/util/result.ts";

function okOf<T>(r: Result<T>): T {
  assert.ok("ok" in r, JSON.stringify(r));
  return r.ok;
}

function fileConfig(text: string): RelayConfig {
  const loaded = parseConfig(text, "config.toml");
  assert.ok("ok" in loaded, JSON.stringify(loaded));
  return loaded.ok.config;
}

const FILE = fileConfig(`
model = "file-model"
model_reasoning_effort = "low"
sandbox_mode = "read-only"
[infty.roles.verifier]
model = "role-model"
model_reasoning_effort = "high"
[[capability_roots]]
environment = "local"
path = "/from/config"
`);

describe("resolveConfig", () => {
  test("the file alone, when nothing else is given", () => {
    const c = resolveConfig(FILE);
    assert.ok("ok" in c);
    assert.equal(c.ok.model, "file-model");
    assert.equal(c.ok.sandbox_mode, "read-only");
  });

  test("a role's section over the file; what a resume recorded over that; the flags over all", () => {
    const role = resolveConfig(FILE, { role: "verifier" });
    assert.ok("ok" in role);
    assert.deepEqual([role.ok.model, role.ok.model_reasoning_effort], ["role-model", "high"]);
    assert.equal(
      okOf(resolveConfig(FILE, { role: "solver" })).model,
      "file-model",
      "another role's section does not apply",
    );

    const resumed = resolveConfig(FILE, {
      role: "verifier",
      recorded: [{ model: "recorded", sandbox_mode: "danger-full-access" }],
    });
    assert.ok("ok" in resumed);
    assert.deepEqual(
      [resumed.ok.model, resumed.ok.sandbox_mode, resumed.ok.model_reasoning_effort],
      ["recorded", "danger-full-access", "high"],
    );

    const flagged = resolveConfig(FILE, {
      role: "verifier",
      recorded: [{ model: "recorded" }],
      flags: [{ model: "global-flag", reasoning_effort: undefined }, { model: "role-flag" }],
    });
    assert.ok("ok" in flagged);
    assert.equal(flagged.ok.model, "role-flag", "the role's own flag is the last layer");
    assert.equal(flagged.ok.model_reasoning_effort, "high", "an undefined flag leaves the layer below");
  });

  test("numbers given as text are read as numbers; a bad value is refused as the file's would be", () => {
    const c = resolveConfig(FILE, { flags: [{ model_context_window: "8000", shell_login: true, yield_time_ms: 500 }] });
    assert.ok("ok" in c);
    assert.equal(c.ok.model_context_window, 8000);
    assert.equal(c.ok.shell.login, true);
    assert.equal(c.ok.exec.yield_time_ms, 500);
    const bad = resolveConfig(FILE, { flags: [{ sandbox_mode: "everything" }] });
    assert.ok("error" in bad);
    assert.match(bad.error.message, /^command-line override: .*sandbox_mode/);
  });
});

describe("resolveSelection", () => {
  const configRoot = capabilityRoot("local", "/from/config");

  test("roots: the flags, else the recorded ones, else config.toml's", () => {
    assert.deepEqual(okOf(resolveSelection({}, {}, FILE)).capabilityRoots, [configRoot]);
    const recorded = [capabilityRoot("local", "/recorded")];
    assert.deepEqual(okOf(resolveSelection({}, { capabilityRoots: recorded }, FILE)).capabilityRoots, recorded);
    assert.deepEqual(
      okOf(resolveSelection({ capabilityRoot: ["local:/flag"] }, { capabilityRoots: recorded }, FILE)).capabilityRoots,
      [capabilityRoot("local", "/flag")],
    );
  });

  test("environments merge by name, the flags last; the executor's name from the flag, the record, the command", () => {
    const s = resolveSelection(
      { environment: ["build=relay executor --flag"], executorName: "mine" },
      {
        environments: [
          { name: "build", command: "old" },
          { name: "gpu", command: "gpu-exec" },
        ],
      },
      FILE,
    );
    assert.ok("ok" in s, JSON.stringify(s));
    assert.deepEqual(
      s.ok.environments.map((e) => [e.name, e.command]),
      [
        ["build", "relay executor --flag"],
        ["gpu", "gpu-exec"],
      ],
    );
    assert.equal(s.ok.executorName, "mine");
    assert.equal(okOf(resolveSelection({}, { executorName: "recorded" }, FILE)).executorName, "recorded");
  });

  test("refused, with the reason: a malformed root, two roots with one id, an environment named like the executor", () => {
    const malformed = resolveSelection({ capabilityRoot: ["no-colon"] }, {}, FILE);
    assert.ok("error" in malformed);
    const twice = resolveSelection({ capabilityRoot: ["id=a,env=local,path=/x", "id=a,env=local,path=/y"] }, {}, FILE);
    assert.ok("error" in twice);
    assert.match(twice.error.message, /two capability roots have the id "a"/);
    const clash = resolveSelection({ environment: ["mine=relay executor"], executorName: "mine" }, {}, FILE);
    assert.ok("error" in clash);
    assert.match(clash.error.message, /"mine" is the name of the session's own executor/);
  });
});
