/**
 * The real Codex CLI, for the tests and benchmarks that run it beside relay: where it is, and a
 * CODEX_HOME whose config sends it to a fake model server.
 */
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The codex binary to drive (`given`, RELAY_TEST_CODEX, or PATH) and its version, or why there is none. */
export function findCodex(given?: string): { bin: string; version: string } | { missing: string } {
  const candidates = [
    given,
    process.env.RELAY_TEST_CODEX,
    ...(process.env.PATH ?? "")
      .split(":")
      .filter(Boolean)
      .map((d) => path.join(d, "codex")),
  ];
  for (const bin of candidates) {
    if (!bin || !existsSync(bin)) continue;
    const v = spawnSync(bin, ["--version"], { encoding: "utf8", timeout: 30_000 });
    const version = /codex-cli (\S+)/.exec(v.stdout ?? "")?.[1];
    if (v.status === 0 && version) return { bin, version };
  }
  return {
    missing: "no codex CLI (set RELAY_TEST_CODEX to a codex binary, or `npm install -g @openai/codex@0.171.0`)",
  };
}

/** Writes `codexHome`/config.toml: provider "fake" at `baseUrl` (Responses API), model test-model, key in FAKE_KEY. */
export function writeCodexConfig(codexHome: string, baseUrl: string): void {
  writeFileSync(
    path.join(codexHome, "config.toml"),
    [
      `model_provider = "fake"`,
      `model = "test-model"`,
      `[model_providers.fake]`,
      `name = "Fake"`,
      `base_url = "${baseUrl}"`,
      `wire_api = "responses"`,
      `env_key = "FAKE_KEY"`,
      ``,
    ].join("\n"),
  );
}
