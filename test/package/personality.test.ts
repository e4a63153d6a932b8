import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { applyPersonality } from "../../src/package/personality.ts";

describe("binary personalities", () => {
  const argv = (...a: string[]) => ["bun", "/$bunfs/root/relay", ...a];
  test("relay-code-mode-host with no subcommand acts as `relay code-mode-host`", () => {
    assert.deepEqual(applyPersonality(argv(), "/p/bin/relay-code-mode-host", true), argv("code-mode-host"));
    assert.deepEqual(
      applyPersonality(argv(), "C:\\p\\bin\\relay-code-mode-host.exe".replace(/\\/g, "/"), true),
      argv("code-mode-host"),
    );
  });
  test("relay-executor with no subcommand (or only options) acts as `relay executor`", () => {
    assert.deepEqual(applyPersonality(argv(), "/p/bin/relay-executor", true), argv("executor"));
    assert.deepEqual(
      applyPersonality(argv("--check", "--json"), "/p/bin/relay-executor", true),
      argv("executor", "--check", "--json"),
    );
    assert.deepEqual(applyPersonality(argv("run", "hi"), "/p/bin/relay-executor", true), argv("run", "hi"));
  });
  test("explicit subcommands, --version and --help keep their meaning; other names and source runs are untouched", () => {
    assert.deepEqual(applyPersonality(argv("rpc-echo"), "/p/bin/relay-code-mode-host", true), argv("rpc-echo"));
    assert.deepEqual(
      applyPersonality(argv("code-mode-host"), "/p/bin/relay-code-mode-host", true),
      argv("code-mode-host"),
    );
    assert.deepEqual(applyPersonality(argv("--version"), "/p/bin/relay-code-mode-host", true), argv("--version"));
    assert.deepEqual(applyPersonality(argv("--help"), "/p/bin/relay-code-mode-host", true), argv("--help"));
    assert.deepEqual(applyPersonality(argv(), "/p/bin/relay", true), argv());
    assert.deepEqual(applyPersonality(argv(), "/usr/bin/relay-code-mode-host", false), argv());
  });
});
