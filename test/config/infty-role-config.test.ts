/** src/config/infty/role-models.ts on its own: the role spec syntax and the order of the layers per role. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { applyOverrides, parseConfig } from "../../src/config/config.ts";
import { type RoleModelLayers, roleConfig } from "../../src/config/infty/role-models.ts";
import { runSettings } from "../../src/config/infty/run-settings.ts";
import { parseRoleModelSpec } from "../../src/config/role-spec.ts";
import { RunMetaSchema } from "../../src/infty/run-format.ts";

const spec = (s: string) => {
  const r = parseRoleModelSpec(s, "--x-model");
  assert.ok("ok" in r, "error" in r ? r.error.message : "");
  return r.ok;
};
const refused = (s: string) => {
  const r = parseRoleModelSpec(s, "--x-model");
  assert.ok("error" in r, `${s} was accepted`);
  return r.error.message;
};

describe("role model specs", () => {
  test("a model, keys after it, or keys alone; a colon belongs to the model name", () => {
    assert.deepEqual(spec("gpt-5"), {
      model: "gpt-5",
      provider: undefined,
      base_url: undefined,
      api_key_env: undefined,
      reasoning_effort: undefined,
    });
    const local = spec(
      "qwen3:8b,provider=openai-chat,base-url=http://localhost:11434/v1,effort=low,key-env=OLLAMA_KEY",
    );
    assert.deepEqual(local, {
      model: "qwen3:8b",
      provider: "openai-chat",
      base_url: "http://localhost:11434/v1",
      api_key_env: "OLLAMA_KEY",
      reasoning_effort: "low",
    });
    assert.equal(spec("effort=high").model, undefined);
    assert.equal(spec("effort=high").reasoning_effort, "high");
  });

  test("unknown, repeated, empty and invalid settings are refused naming the flag and the key", () => {
    assert.match(
      refused("m,temperature=1"),
      /--x-model "m,temperature=1": "temperature=1" is not one of provider=, base-url=/,
    );
    assert.match(refused("m,effort=a,effort=b"), /sets effort twice/);
    assert.match(
      refused("m,provider=ollama"),
      /provider must be one of openai-responses, openai-chat, scripted \(got "ollama"\)/,
    );
    assert.match(refused("m,base-url=localhost:11434"), /base-url must be an http:\/\/ or https:\/\/ URL/);
    assert.match(refused("m,key-env=1X"), /key-env must be an environment variable name/);
    assert.match(refused(""), /--x-model needs a model or a setting/);
    assert.match(refused("m,effort="), /effort must not be empty/);
  });
});

describe("a role's configuration", () => {
  const toml = `model = "top"\nmodel_provider = "openai-chat"\n[infty.roles.solver]\nmodel = "from-config"\nmodel_reasoning_effort = "low"\n[infty.roles.verifier]\nbase_url = "http://127.0.0.1:9/v1"\n`;
  const loaded = parseConfig(toml, "config.toml");
  assert.ok("ok" in loaded);
  const base = loaded.ok.config;
  const model = (l: Partial<RoleModelLayers>, role: string) => {
    const r = roleConfig({ base, globalFlags: {}, roleFlags: {}, ...l }, role);
    assert.ok("ok" in r, "error" in r ? r.error.message : "");
    return r.ok;
  };

  test("[infty.roles.<role>] beats the top level, key by key; other roles keep the top level", () => {
    assert.equal(model({}, "solver").model, "from-config");
    assert.equal(model({}, "solver").model_reasoning_effort, "low");
    assert.equal(model({}, "solver").model_provider, "openai-chat");
    assert.equal(model({}, "director").model, "top");
    assert.equal(model({}, "verifier-2").base_url, "http://127.0.0.1:9/v1");
    assert.equal(model({}, "director").base_url, undefined);
  });

  test("flags beat config: -m for every role, the role's flag beats -m; verifier i gets the i-th, the last repeats", () => {
    const globalFlags = { model: "flag-all" };
    assert.equal(model({ globalFlags }, "solver").model, "flag-all");
    assert.equal(
      model({ globalFlags }, "solver").model_reasoning_effort,
      "low",
      "a key no flag sets still comes from the role's table",
    );
    const roleFlags = { solver: { model: "flag-solver" }, verifiers: [{ model: "v1" }, { model: "v2" }] };
    assert.equal(model({ globalFlags, roleFlags }, "solver").model, "flag-solver");
    assert.deepEqual(
      ["verifier-1", "verifier-2", "verifier-3"].map((r) => model({ globalFlags, roleFlags }, r).model),
      ["v1", "v2", "v2"],
    );
  });

  test("on resume the recorded role beats config and the run's defaults; a flag beats the record", () => {
    const c = (m: string) => {
      const r = applyOverrides(base, { model: m });
      assert.ok("ok" in r);
      return r.ok;
    };
    const recorded = runSettings(c("old-default"), { solver: c("old-solver") });
    assert.equal(model({ recorded }, "solver").model, "old-solver");
    assert.equal(
      model({ recorded }, "director").model,
      "old-default",
      "a role recorded before roles had their own: the run's default",
    );
    assert.equal(model({ recorded, roleFlags: { solver: { model: "new" } } }, "solver").model, "new");
    assert.equal(model({ recorded, globalFlags: { model: "new-all" } }, "solver").model, "new-all");
  });

  test("an invalid [infty.roles] key is a config error with its key path", () => {
    const bad = parseConfig(`[infty.roles.director]\nmodel_provider = "ollama"\n`, "config.toml");
    assert.ok("error" in bad);
    assert.match(
      bad.error.message,
      /config\.toml: infty\.roles\.director\.model_provider must be one of openai-responses, openai-chat, scripted \(got "ollama"\)/,
    );
    const typo = parseConfig(`[infty.roles.solver]\nmodle = "x"\n`, "config.toml");
    assert.ok("ok" in typo);
    assert.match(
      typo.ok.warnings.join("\n"),
      /unknown key "infty\.roles\.solver\.modle" ignored \(did you mean "infty\.roles\.solver\.model"\?\)/,
    );
  });
});

describe("run.json settings", () => {
  const meta = {
    run_id: "r",
    objective: "o",
    created_at: "t",
    updated_at: "t",
    heartbeat_at: "t",
    status: "running",
    verifiers: 1,
    consensus: "all",
    roles: [],
    turns: 0,
    max_turns: 1,
    max_wall_ms: 60_000,
    wall_ms_used: 0,
    pending: null,
    deliverable: null,
    last_checkpoint: null,
    next_note: 1,
  };
  test("an older run.json (settings without roles or tools) still loads", () => {
    const old = {
      ...meta,
      settings: {
        model: "m",
        model_provider: "openai-chat",
        api_key_env: "OPENAI_API_KEY",
        sandbox_mode: "workspace-write",
      },
    };
    assert.ok(RunMetaSchema.safeParse(old).success);
    assert.ok(RunMetaSchema.safeParse(meta).success, "and one without settings at all");
  });
  test("a role with an unknown provider or a bad role name is refused", () => {
    const role = { model: "m", model_provider: "openai-chat", api_key_env: "OPENAI_API_KEY" };
    const settings = {
      model: "m",
      model_provider: "openai-chat",
      api_key_env: "OPENAI_API_KEY",
      sandbox_mode: "workspace-write",
    };
    assert.ok(RunMetaSchema.safeParse({ ...meta, settings: { ...settings, roles: { solver: role } } }).success);
    assert.ok(
      !RunMetaSchema.safeParse({
        ...meta,
        settings: { ...settings, roles: { solver: { ...role, model_provider: "x" } } },
      }).success,
    );
    assert.ok(!RunMetaSchema.safeParse({ ...meta, settings: { ...settings, roles: { critic: role } } }).success);
    assert.ok(!RunMetaSchema.safeParse({ ...meta, role_timeout_ms: 0 }).success);
  });
});
