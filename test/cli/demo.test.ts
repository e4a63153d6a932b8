import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { probeSandbox } from "../../src/executor/sandbox/index.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();

// The README's main job must keep working as written.
describe("npm run demo", () => {
  test("the offline demo session runs real commands and writes files, every tool call in the built-in sandbox", { skip: skipBecause("npm run demo", support.mechanism !== "landlock" && `the built-in sandbox cannot run here: ${support.detail}`) }, async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-demo-test-"));
    try {
      const child = spawn(process.execPath, [path.join(REPO_ROOT, "scripts/demo.ts")], { cwd: REPO_ROOT, env: { ...process.env, RELAY_HOME: home, RELAY_SANDBOX_SIMULATE: "no-bwrap" }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
      const code = await new Promise((r) => child.once("exit", r));
      assert.equal(code, 0, out);
      assert.match(out, /Hello, Relay!\n\s+test passed/);
      assert.match(out, /Hi, Relay/, "the PTY prompt was answered through write_stdin");
      assert.match(out, /Hello, world! \(from relay\)/, "the patch was applied");
      assert.match(out, /files in .*: hello\.js, hello\.test\.mjs, package\.json/);
      // Every tool call succeeded, in the default sandbox, with no bubblewrap to fall back on.
      const calls = out.match(/▸ /g)?.length ?? 0;
      assert.ok(calls >= 7, out);
      assert.equal(out.match(/✓/g)?.length, calls, out);
      assert.doesNotMatch(out, /✗/);
      assert.match(out, /sandbox workspace-write · landlock\n/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
