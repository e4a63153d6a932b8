import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { applyOverrides, defaultConfig, loadConfig } from "../../src/config/config.ts";
import { configPath, relayHome, relayPaths } from "../../src/home/home.ts";
import { must, mustErr, withHome } from "../session/support.ts";

async function writeConfig(home: string, text: string): Promise<string> {
  await mkdir(home, { recursive: true });
  await writeFile(configPath(home), text);
  return configPath(home);
}

describe("relay home", () => {
  test("RELAY_HOME wins, made absolute; unset or empty means ~/.relay", () => {
    assert.equal(relayHome({ RELAY_HOME: "/tmp/rh" }), "/tmp/rh");
    assert.equal(relayHome({ RELAY_HOME: "rel/dir" }), path.resolve("rel/dir"));
    assert.equal(relayHome({ RELAY_HOME: "~/x" }), path.join(os.homedir(), "x"));
    assert.equal(relayHome({}), path.join(os.homedir(), ".relay"));
    assert.equal(relayHome({ RELAY_HOME: "  " }), path.join(os.homedir(), ".relay"));
  });

  test("paths inside the home", () => {
    assert.deepEqual(relayPaths("/h"), {
      home: "/h",
      config: path.join("/h", "config.toml"),
      sessions: path.join("/h", "sessions"),
      stateDb: path.join("/h", "state.sqlite"),
      memories: path.join("/h", "memories"),
      infty: path.join("/h", "infty"),
      logs: path.join("/h", "logs"),
    });
  });
});

describe("config.toml", () => {
  test("a missing file gives the defaults", async () => {
    await withHome(async (home) => {
      const loaded = must(await loadConfig(home));
      assert.equal(loaded.exists, false);
      assert.deepEqual(loaded.warnings, []);
      assert.deepEqual(loaded.config, defaultConfig());
      assert.equal(loaded.config.model_provider, "openai-responses");
      assert.equal(loaded.config.api_key_env, "OPENAI_API_KEY");
      assert.equal(loaded.config.approval_policy, "on-request");
      assert.equal(loaded.config.sandbox_mode, "workspace-write");
      assert.equal(loaded.config.auto_compact_fraction, 0.9);
      assert.deepEqual(loaded.config.shell, { login: false });
      assert.deepEqual(loaded.config.exec, { max_output_tokens: 10000, yield_time_ms: 10000 });
      assert.equal(loaded.config.project_doc_max_bytes, 32768);
      assert.equal(loaded.config.base_url, undefined);
    });
  });

  test("reads every key, tables included, and fills the rest with defaults", async () => {
    await withHome(async (home) => {
      await writeConfig(
        home,
        [
          'model = "my-model"',
          'model_provider = "openai-chat"',
          'base_url = "http://localhost:8080/v1"',
          'approval_policy = "never"',
          "model_context_window = 128000",
          "auto_compact_fraction = 1",
          'executor = "ssh box relay executor"',
          "",
          "[shell]",
          'path = "/bin/zsh"',
          "login = true",
          "",
          "[exec]",
          "yield_time_ms = 250",
        ].join("\n"),
      );
      const { config, warnings, exists } = must(await loadConfig(home));
      assert.equal(exists, true);
      assert.deepEqual(warnings, []);
      assert.equal(config.model, "my-model");
      assert.equal(config.model_provider, "openai-chat");
      assert.equal(config.base_url, "http://localhost:8080/v1");
      assert.equal(config.approval_policy, "never");
      assert.equal(config.sandbox_mode, "workspace-write");
      assert.equal(config.model_context_window, 128000);
      assert.equal(config.auto_compact_fraction, 1);
      assert.equal(config.executor, "ssh box relay executor");
      assert.deepEqual(config.shell, { path: "/bin/zsh", login: true });
      assert.deepEqual(config.exec, { max_output_tokens: 10000, yield_time_ms: 250 });
    });
  });

  test("a TOML syntax error names the file, line and column", async () => {
    await withHome(async (home) => {
      const file = await writeConfig(home, 'model = "m"\napproval_policy = \n');
      const e = mustErr(await loadConfig(home));
      assert.equal(e.code, "config_syntax");
      assert.ok(e.message.startsWith(`${file}:2:`), e.message);
      assert.match(e.message, /TOML syntax error/);
      assert.equal((e.data as { line: number }).line, 2);
    });
  });

  test("a schema error names the file, the key, what is allowed and what was given", async () => {
    await withHome(async (home) => {
      const file = await writeConfig(home, 'approval_policy = "sometimes"\n');
      const e = mustErr(await loadConfig(home));
      assert.equal(e.code, "config_invalid");
      assert.equal(e.message, `${file}: approval_policy must be one of untrusted, on-request, never (got "sometimes")`);
    });
  });

  test("codex_provider_id takes a provider id and refuses anything else", async () => {
    await withHome(async (home) => {
      await writeConfig(home, 'codex_provider_id = "azure"\n');
      const loaded = await loadConfig(home);
      assert.ok("ok" in loaded);
      assert.equal(loaded.ok.config.codex_provider_id, "azure");
      await writeConfig(home, 'codex_provider_id = "my provider"\n');
      assert.match(
        mustErr(await loadConfig(home)).message,
        /codex_provider_id must be a Codex provider id such as openai/,
      );
    });
  });

  test("several schema errors are all listed, with nested key paths", async () => {
    await withHome(async (home) => {
      await writeConfig(home, 'auto_compact_fraction = 0\nshell = "bash"\n[exec]\nmax_output_tokens = 1.5\n');
      const e = mustErr(await loadConfig(home));
      assert.match(e.message, /3 problems/);
      assert.match(e.message, /auto_compact_fraction must be greater than 0 \(got 0\)/);
      assert.match(e.message, /shell must be a table \(got "bash"\)/);
      assert.match(e.message, /exec\.max_output_tokens must be an integer \(got 1\.5\)/);
    });
  });

  test("unknown keys are warnings, with a suggestion for near misses", async () => {
    await withHome(async (home) => {
      const file = await writeConfig(home, 'aproval_policy = "never"\nzzz_custom = 1\n[shell]\nlogn = true\n');
      const { config, warnings } = must(await loadConfig(home));
      assert.equal(config.approval_policy, "on-request");
      assert.deepEqual(warnings, [
        `${file}: unknown key "aproval_policy" ignored (did you mean "approval_policy"?)`,
        `${file}: unknown key "zzz_custom" ignored`,
        `${file}: unknown key "shell.logn" ignored (did you mean "shell.login"?)`,
      ]);
    });
  });

  test("unknown keys of [memories] are warnings too (the section is read on its own, where memories are used)", async () => {
    await withHome(async (home) => {
      const file = await writeConfig(
        home,
        '[memories]\nmax_rollout_per_run = 3\nuse_memories = false\nsources = ["cli"]\nzzz = 1\n',
      );
      const { warnings } = must(await loadConfig(home));
      assert.deepEqual(warnings, [
        `${file}: unknown key "memories.max_rollout_per_run" ignored (did you mean "memories.max_rollouts_per_run"?)`,
        `${file}: unknown key "memories.zzz" ignored`,
      ]);
      await writeConfig(home, "[memories]\nmax_rollouts_per_run = 3\n");
      assert.deepEqual(must(await loadConfig(home)).warnings, []);
    });
  });

  test("command-line overrides win, are validated, and skip undefined members", () => {
    const base = defaultConfig();
    const c = must(
      applyOverrides(base, {
        model: "other",
        provider: "scripted",
        approval_policy: "never",
        shell_login: true,
        yield_time_ms: "500",
        auto_compact_fraction: undefined,
      }),
    );
    assert.equal(c.model, "other");
    assert.equal(c.model_provider, "scripted");
    assert.equal(c.approval_policy, "never");
    assert.equal(c.shell.login, true);
    assert.equal(c.exec.yield_time_ms, 500);
    assert.equal(c.auto_compact_fraction, 0.9);
    assert.equal(base.model, defaultConfig().model, "the input config is not mutated");

    const e = mustErr(applyOverrides(base, { provider: "anthropic" }));
    assert.equal(
      e.message,
      'command-line override: model_provider must be one of openai-responses, openai-chat, scripted (got "anthropic")',
    );
  });
});
