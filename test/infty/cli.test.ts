import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { runRelayAsync } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";


describe("relay infty CLI", () => {
  // The scripted demo runs its commands in the workspace-write sandbox.
  test("the scripted demo completes; status, list and logs describe it", { skip: skipBecause("the infty demo through the CLI", noSandboxHere()) }, async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-cli-"));
    try {
      const run = await relay(["infty", "run", "--run-id", "demo", "--script", "examples/infty-demo.json", "build wc"], home);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout.trim(), path.join(home, "infty", "demo", "deliverable"));
      const status = await relay(["infty", "status", "demo", "--json"], home);
      const s = JSON.parse(status.stdout) as { status: string; roles: Array<{ role: string }> };
      assert.equal(s.status, "complete");
      assert.deepEqual(s.roles.map((r) => r.role), ["solver", "director", "verifier-1"]);
      const list = await relay(["infty", "list"], home);
      assert.match(list.stdout, /^demo\tcomplete\t/);
      const logs = await relay(["infty", "logs", "demo", "-n", "1"], home);
      assert.match(logs.stdout, /run_finished status=complete/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("bad input: unknown run, bad run id, bad script, a second run with the same id", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-cli-"));
    try {
      const unknown = await relay(["infty", "status", "nope"], home);
      assert.equal(unknown.status, 2);
      assert.match(unknown.stderr, /no run nope.*relay infty list/);
      const badId = await relay(["infty", "resume", "../etc"], home);
      assert.equal(badId.status, 2);
      assert.match(badId.stderr, /must start with a letter or digit/);
      writeFileSync(path.join(home, "bad.json"), JSON.stringify({ director: { turns: [] } }));
      const badScript = await relay(["infty", "run", "--script", path.join(home, "bad.json"), "x"], home);
      assert.equal(badScript.status, 2);
      assert.match(badScript.stderr, /is not an infty script.*solver/s);
      const noObjective = await relay(["infty", "run"], home);
      assert.equal(noObjective.status, 2);
      // Unsandboxed, so this part runs under Deno and Node too: it is about the run id.
      const first = await relay(["infty", "run", "--run-id", "same", "--sandbox", "danger-full-access", "--script", "examples/infty-demo.json", "x"], home);
      assert.equal(first.status, 0, first.stderr);
      const again = await relay(["infty", "run", "--run-id", "same", "--script", "examples/infty-demo.json", "x"], home);
      assert.equal(again.status, 2);
      assert.match(again.stderr, /run same already exists at .*; resume it with: relay infty resume same/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

function relay(args: string[], home: string) {
  return runRelayAsync(args, { ...process.env, RELAY_HOME: home });
}
