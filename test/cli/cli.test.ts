import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv } from "../support/self.ts";

function relay(args: string[], env: Record<string, string> = {}) {
  const [cmd, ...pre] = relayArgv();
  return spawnSync(cmd!, [...pre, ...args], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
}

describe("relay CLI", () => {
  test("--help lists every subcommand and exits 0", () => {
    const r = relay(["--help"]);
    assert.equal(r.status, 0);
    for (const sub of [
      "run",
      "sessions",
      "skills",
      "executor",
      "code-mode-host",
      "infty",
      "memories",
      "package",
      "sandbox",
      "doctor",
    ])
      assert.match(r.stdout, new RegExp(`\\n  ${sub}\\b`));
    assert.doesNotMatch(r.stdout, /rpc-echo|__sandbox-exec/, "internal commands stay hidden");
  });

  test("unknown commands and flags exit 2 with a clear message", () => {
    const cmd = relay(["frobnicate"]);
    assert.equal(cmd.status, 2);
    assert.match(cmd.stderr, /unknown command 'frobnicate'/);
    const flag = relay(["executor", "--no-such-flag"]);
    assert.equal(flag.status, 2);
    assert.match(flag.stderr, /unknown option '--no-such-flag'/);
  });

  test("executor --check reports a working executor as JSON", () => {
    const r = relay(["executor", "--check", "--json"]);
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as {
      info: { pty: boolean };
      tools: string[];
      test_command: { output: string; exit_code: number };
    };
    assert.ok(report.tools.includes("exec_command"));
    assert.match(report.test_command.output, /^ok from /);
    assert.equal(report.test_command.exit_code, 0);
    const confined = (
      report as unknown as { sandboxed_command: { output?: string; exit_code?: number; error?: string } }
    ).sandboxed_command;
    assert.deepEqual([confined.output, confined.exit_code], ["ok", 0], JSON.stringify(confined));
  });

  test("executor --check fails, with the reason, when no sandbox can run here", () => {
    const r = relay(["executor", "--check", "--json"], { RELAY_SANDBOX_SIMULATE: "landlock-abi=0,no-bwrap" });
    assert.equal(r.status, 1);
    const report = JSON.parse(r.stdout) as {
      test_command: { exit_code: number };
      sandboxed_command: { error?: string };
    };
    assert.equal(report.test_command.exit_code, 0, "the executor itself works");
    assert.match(
      report.sandboxed_command.error ?? "",
      /read-only sandbox cannot be applied on this host: .*Landlock.*danger-full-access/,
    );
  });

  test("the hidden sandbox helper refuses a malformed plan with exit 2 and runs nothing", () => {
    const r = relay(["__sandbox-exec", '{"abi":7}', "--", "sh", "-c", "echo ran"]);
    assert.equal(r.status, 2);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /the sandbox plan is malformed: handledFs must be a 32-bit mask/);
    const junk = relay(["__sandbox-exec", "{not json", "--", "true"]);
    assert.equal(junk.status, 2);
    assert.match(junk.stderr, /not valid JSON/);
    const noCommand = relay(["__sandbox-exec", "{}"]);
    assert.equal(noCommand.status, 2);
    assert.match(noCommand.stderr, /usage: relay __sandbox-exec/);
  });

  test("executor --check through a command line, and a broken one", () => {
    const good = relay([
      "executor",
      "--check",
      "--executor",
      joinCommandLine(["sh", "-c", `exec ${joinCommandLine(relayArgv())} executor`]),
    ]);
    assert.equal(good.status, 0, good.stderr);
    assert.match(good.stdout, /tools: exec_command, write_stdin/);
    const bad = relay(["executor", "--check", "--executor", "/nonexistent/relay executor"]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /executor check failed: .*could not start "\/nonexistent\/relay"/);
    const unterminated = relay(["executor", "--check", "--executor", "ssh 'host"]);
    assert.equal(unterminated.status, 2);
    assert.match(unterminated.stderr, /cannot split the command line `ssh 'host`: unterminated '/);
  });
});
