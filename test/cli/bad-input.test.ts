/**
 * Bad input at the door: each request that cannot start exits 2 with one line saying why and
 * what to do, and writes nothing (no rollout, no run directory) into a fresh home.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { runRelayAsync } from "../support/self.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-bad-input-"));

function freshEnv(name: string): { env: NodeJS.ProcessEnv; home: string } {
  const home = path.join(base, name);
  const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  return { env, home };
}

const written = (home: string) =>
  existsSync(home) ? (readdirSync(home, { recursive: true }) as string[]).filter((f) => /\.(jsonl|json)$/.test(f)) : [];

describe("bad input at the door", () => {
  after(() => rmSync(base, { recursive: true, force: true }));

  const cases: Array<{ name: string; args: string[]; stderr: RegExp; env?: Record<string, string> }> = [
    {
      name: "-C a missing directory",
      args: ["run", "-C", path.join(base, "nope"), "--script", "examples/demo-script.json", "hi"],
      stderr: /^relay: -C .*nope: no such directory .*Nothing was started\.\n$/,
    },
    {
      name: "-C a file",
      args: ["run", "-C", "/etc/passwd", "--script", "examples/demo-script.json", "hi"],
      stderr: /^relay: -C \/etc\/passwd: not a directory/,
    },
    {
      name: "run without an API key",
      args: ["run", "hi"],
      stderr:
        /^relay: OPENAI_API_KEY is not set, and the openai-responses provider at https:\/\/api\.openai\.com\/v1 needs it\..*--api-key-env.*--provider openai-chat --base-url .*Nothing was started\.\n$/,
    },
    {
      name: "a key variable named by --api-key-env that is unset",
      args: ["run", "--api-key-env", "MY_RELAY_KEY", "hi"],
      stderr: /^relay: MY_RELAY_KEY is not set/,
    },
    {
      name: "infty run without an API key",
      args: ["infty", "run", "an objective"],
      stderr: /^relay: OPENAI_API_KEY is not set.*Nothing was started\.\n$/,
    },
    {
      name: "--max-turns abc",
      args: ["infty", "run", "--max-turns", "abc", "obj"],
      stderr: /^relay: --max-turns must be a whole number \(got abc\)\n$/,
    },
    {
      name: "--max-turns 0",
      args: ["infty", "run", "--script", "examples/infty-demo.json", "--max-turns", "0", "obj"],
      stderr: /^relay: --max-turns must be at least 1 \(got 0\)\n$/,
    },
    {
      name: "--verifiers -1",
      args: ["infty", "run", "--script", "examples/infty-demo.json", "--verifiers", "-1", "obj"],
      stderr: /^relay: --verifiers must be a whole number \(got -1\)\n$/,
    },
    {
      name: "--max-steps 0",
      args: ["run", "--script", "examples/demo-script.json", "--max-steps", "0", "hi"],
      stderr: /^relay: --max-steps must be at least 1 \(got 0\)\n$/,
    },
    {
      name: "--max-steps abc",
      args: ["run", "--script", "examples/demo-script.json", "--max-steps", "abc", "hi"],
      stderr: /^relay: --max-steps must be a whole number \(got abc\)\n$/,
    },
    {
      name: "--context-window 1.5",
      args: ["run", "--script", "examples/demo-script.json", "--context-window", "1.5", "hi"],
      stderr: /^relay: --context-window must be a whole number \(got 1\.5\)\n$/,
    },
    {
      name: "sessions list --limit 0",
      args: ["sessions", "list", "--limit", "0"],
      stderr: /^relay: --limit must be at least 1 \(got 0\)\n$/,
    },
    {
      name: "memories consolidate --min-idle-hours -1",
      args: ["memories", "consolidate", "--min-idle-hours", "-1"],
      stderr: /^relay: --min-idle-hours must be a whole number \(got -1\)\n$/,
    },
    {
      name: "an empty prompt",
      args: ["run", "--script", "examples/demo-script.json", ""],
      stderr:
        /^relay: the prompt is empty; say what to do, e\.g\. relay run "make the tests pass"\. Nothing was started\.\n$/,
    },
    {
      name: "a prompt of blanks",
      args: ["run", "--script", "examples/demo-script.json", "  \n "],
      stderr: /^relay: the prompt is empty/,
    },
    {
      name: "a missing --script file",
      args: ["run", "--script", path.join(base, "missing.json"), "hi"],
      stderr: /^relay: --script .*missing\.json: no such file .*Nothing was started\.\n$/,
    },
    {
      name: "an unknown command with --help",
      args: ["frobnicate", "--help"],
      stderr: /^relay: unknown command 'frobnicate'; the commands are: run, .*sandbox, doctor/,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: exit 2, one line, nothing written`, async () => {
      const { env, home } = freshEnv(c.name.replace(/\W+/g, "-"));
      const r = await runRelayAsync(c.args, { ...env, ...c.env });
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, c.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, `one line: ${r.stderr}`);
      assert.equal(r.stdout, "");
      assert.deepEqual(written(home), [], "no rollout or run left behind");
    });
  }

  test("a local server needs no key: the preflight lets it through", async () => {
    const { env } = freshEnv("local");
    // Nothing listens on port 9: the session starts, then fails to connect (exit 1, not 2).
    const r = await runRelayAsync(
      [
        "run",
        "--provider",
        "openai-chat",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-m",
        "m",
        "--sandbox",
        "danger-full-access",
        "hi",
      ],
      env,
    );
    assert.notEqual(r.status, 2, r.stderr);
    assert.doesNotMatch(r.stderr, /is not set/);
  });
});
