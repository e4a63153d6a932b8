import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();

function runDemo(
  extraEnv: Record<string, string>,
  script = "scripts/demo.ts",
): Promise<{ code: number | null; out: string }> {
  const home = mkdtempSync(path.join(os.tmpdir(), "relay-demo-test-"));
  const child = spawn(process.execPath, [path.join(REPO_ROOT, script)], {
    cwd: REPO_ROOT,
    env: { ...process.env, RELAY_HOME: home, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
  return new Promise((resolve) =>
    child.once("close", (code) => {
      rmSync(home, { recursive: true, force: true });
      resolve({ code, out });
    }),
  );
}

// The README's main job must keep working as written.
describe("npm run demo", () => {
  test("the offline demo session runs real commands and writes files, every tool call in the built-in sandbox", {
    skip: skipBecause(
      "npm run demo",
      support.mechanism !== "landlock" && `the built-in sandbox cannot run here: ${support.detail}`,
    ),
  }, async () => {
    const { code, out } = await runDemo({ RELAY_SANDBOX_SIMULATE: "no-bwrap" });
    assert.equal(code, 0, out);
    assert.match(out, /Hello, Relay!\n\s+test passed/);
    assert.match(out, /Hi, Relay/, "the PTY prompt was answered through write_stdin");
    assert.match(
      out,
      /Hello, world! \(from relay\)\n\s+test passed/,
      "the patch was applied and the test still passes",
    );
    assert.match(out, /files in .*: hello\.js, hello\.test\.mjs, package\.json/);
    // Every tool call succeeded, in the default sandbox, with no bubblewrap to fall back on.
    const calls = out.match(/▸ /g)?.length ?? 0;
    assert.ok(calls >= 7, out);
    assert.doesNotMatch(out, /✗/);
    assert.equal(out.match(/✓/g)?.length, calls + 5, "each tool call, then each of the demo's 5 checks");
    assert.match(out, /sandbox workspace-write · landlock\n/);
    assert.match(out, /\ndemo passed: all 5 checks\n/);
  });

  test("a broken tool makes the demo fail loudly, with the first failure's cause", async () => {
    // No sandbox mechanism at all: every exec_command is refused, as on a host without one.
    const { code, out } = await runDemo({ RELAY_SANDBOX_SIMULATE: "landlock-abi=0,no-bwrap" });
    assert.equal(code, 1, out);
    assert.match(
      out,
      /relay: 4 tool call\(s\) failed; the first, exec_command: exec_command failed for `node hello.js Relay && node hello.test.mjs`: the workspace-write sandbox cannot be applied on this host/,
    );
    assert.match(out, /✗ the terminal prompt was answered through write_stdin/);
    assert.match(out, /\ndemo FAILED: the session ended well, every tool call succeeding: relay exited 1/);
    assert.doesNotMatch(out, /demo passed/);
  });
});

describe("npm run demo:infty", () => {
  test("the scripted run completes and the demo checks its deliverable itself", {
    skip: skipBecause(
      "npm run demo:infty",
      support.mechanism !== "landlock" && `the built-in sandbox cannot run here: ${support.detail}`,
    ),
  }, async () => {
    const { code, out } = await runDemo({ RELAY_SANDBOX_SIMULATE: "no-bwrap" }, "scripts/demo-infty.ts");
    assert.equal(code, 0, out);
    assert.match(out, /complete: verified deliverable accepted/);
    assert.doesNotMatch(out, /✗/);
    assert.match(out, /\ndemo:infty passed: all 3 checks\n/);
  });

  test("a broken tool ends the run at once, naming the failed call and its cause", async () => {
    const { code, out } = await runDemo({ RELAY_SANDBOX_SIMULATE: "landlock-abi=0,no-bwrap" }, "scripts/demo-infty.ts");
    assert.equal(code, 1, out);
    assert.match(
      out,
      /solver ✗ exec_command: exec_command failed for `[^`]+`: the workspace-write sandbox cannot be applied on this host/,
    );
    assert.match(
      out,
      /failed: the solver's exec_command call failed: .*cannot be applied on this host.*\(--fail-on-tool-error\)/,
    );
    assert.doesNotMatch(out, /no turn left|manifest rejected|verification pass/, "no later symptom hides the cause");
    assert.match(out, /\ndemo:infty FAILED: the run completed with every tool call succeeding/);
  });
});

describe("npm run demo:infty-repo", () => {
  test("a run on a repository fixes its failing test on the run's branch; the demo checks the commit, the untouched checkout, the diff and the apply itself", {
    skip: skipBecause(
      "npm run demo:infty-repo",
      support.mechanism !== "landlock" && `the built-in sandbox cannot run here: ${support.detail}`,
    ),
  }, async () => {
    const { code, out } = await runDemo({ RELAY_SANDBOX_SIMULATE: "no-bwrap" }, "scripts/demo-infty-repo.ts");
    assert.equal(code, 0, out);
    assert.match(out, /working on .*relay-demo-repo-\w+ in its own checkout .*\/checkout, branch relay\/demo-repo-/);
    assert.match(out, /complete: verified deliverable accepted/);
    assert.doesNotMatch(out, /✗/);
    assert.match(out, /\ndemo:infty-repo passed: all 5 checks/);
  });
});
