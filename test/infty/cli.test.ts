import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { runRelayAsync } from "../support/self.ts";
import { noSandboxHere, skipBecause } from "../support/skip.ts";

describe("relay infty CLI", () => {
  // The scripted demo runs its commands in the workspace-write sandbox.
  test("the scripted demo completes; status, list and logs describe it", {
    skip: skipBecause("the infty demo through the CLI", noSandboxHere()),
  }, async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-cli-"));
    try {
      const run = await relay(
        ["infty", "run", "--no-repo", "--run-id", "demo", "--script", "examples/infty-demo.json", "build wc"],
        home,
      );
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout.trim(), path.join(home, "infty", "demo", "deliverable"));
      const status = await relay(["infty", "status", "demo", "--json"], home);
      const s = JSON.parse(status.stdout) as { status: string; roles: Array<{ role: string }> };
      assert.equal(s.status, "complete");
      assert.deepEqual(
        s.roles.map((r) => r.role),
        ["solver", "director", "verifier-1"],
      );
      const list = await relay(["infty", "list"], home);
      assert.match(list.stdout, /^RUN +STATUS +TURNS +UPDATED +OBJECTIVE\ndemo +complete +\d+ /);
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
      const badScript = await relay(["infty", "run", "--no-repo", "--script", path.join(home, "bad.json"), "x"], home);
      assert.equal(badScript.status, 2);
      assert.match(badScript.stderr, /is not an infty script.*solver/s);
      const noObjective = await relay(["infty", "run"], home);
      assert.equal(noObjective.status, 2);
      // Unsandboxed, so this part runs under Deno and Node too: it is about the run id.
      const first = await relay(
        [
          "infty",
          "run",
          "--no-repo",
          "--run-id",
          "same",
          "--sandbox",
          "danger-full-access",
          "--script",
          "examples/infty-demo.json",
          "x",
        ],
        home,
      );
      assert.equal(first.status, 0, first.stderr);
      const again = await relay(
        ["infty", "run", "--no-repo", "--run-id", "same", "--script", "examples/infty-demo.json", "x"],
        home,
      );
      assert.equal(again.status, 2);
      assert.match(again.stderr, /run same already exists at .*; resume it with: relay infty resume same/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("bad numbers, durations and role models: exit 2, a message with the minimum or the syntax, no run written", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-cli-"));
    const demo = ["infty", "run", "--no-repo", "--script", "examples/infty-demo.json", "--run-id", "never"];
    const cases: Array<[string[], RegExp]> = [
      [["--max-turns", "0"], /--max-turns must be at least 1 \(got 0\)/],
      [["--verifiers", "33"], /--verifiers must be at most 32 \(got 33\)/],
      [["--max-wall", "0"], /--max-wall must be at least 1s \(got "0"\)/],
      [["--max-wall", "-5m"], /--max-wall must be a duration like 90s, 5m, 2h, 1d \(got "-5m"\)/],
      [["--max-wall", "5x"], /--max-wall must be a duration like/],
      [["--max-wall", ""], /--max-wall must be a duration like .*\(got ""\)/],
      [["--max-wall", "90"], /--max-wall needs a unit: s, m, h or d, e.g. 90m/],
      [["--max-wall", "400d"], /--max-wall must be at most 366d/],
      [["--max-wall-minutes", "0"], /--max-wall-minutes must be at least 1s/],
      [["--role-timeout", "25d"], /--role-timeout must be at most 24d/],
      [["--role-timeout-minutes", "abc"], /--role-timeout-minutes must be a number of minutes or a duration/],
      [["--max-wall", "1h", "--max-wall-minutes", "5"], /cannot be used with option '--max-wall/],
      [
        ["--director-model", "m,temperature=1"],
        /--director-model "m,temperature=1": "temperature=1" is not one of provider=/,
      ],
      [["--solver-model", "m,provider=ollama"], /--solver-model "m,provider=ollama": provider must be one of/],
      [
        ["--verifier-model", "a", "--verifier-model", "b"],
        /2 --verifier-model flags for 1 Verifier\(s\).*--verifiers 2/,
      ],
      [["--capability-root", "nocolon"], /--capability-root takes <environment>:<absolute path>/],
    ];
    try {
      for (const [flags, message] of cases) {
        const r = await relay([...demo, ...flags, "x"], home);
        assert.equal(r.status, 2, `${flags.join(" ")}: ${r.stderr}`);
        assert.match(r.stderr, message, flags.join(" "));
      }
      assert.equal(existsSync(path.join(home, "infty", "never")), false, "nothing was written");
      const resume = await relay(["infty", "resume", "never", "--max-wall", "0s"], home);
      assert.equal(resume.status, 2);
      assert.match(resume.stderr, /--max-wall must be at least 1s/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("tools and budgets are recorded and kept on resume; a run.json that fails validation is reported with the field and the fix", async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-cli-"));
    const file = path.join(home, "infty", "t", "run.json");
    const read = () => JSON.parse(readFileSync(file, "utf8")) as Record<string, any>;
    try {
      const base = ["--sandbox", "danger-full-access", "--script", "examples/infty-demo.json"];
      const run = await relay(
        [
          "infty",
          "run",
          "--no-repo",
          "--run-id",
          "t",
          ...base,
          "--code-mode",
          "--capability-root",
          `local:${home}`,
          "--max-wall",
          "90m",
          "--role-timeout",
          "90s",
          "--max-turns",
          "1",
          "x",
        ],
        home,
      );
      assert.equal(run.status, 1, run.stderr);
      assert.equal(read().max_wall_ms, 5_400_000);
      assert.equal(read().role_timeout_ms, 90_000);
      assert.equal(read().settings.code_mode, true);
      assert.deepEqual(read().settings.capability_roots, [
        { id: `local:${home}`, location: { type: "environment", environmentId: "local", path: home } },
      ]);
      const resumed = await relay(
        [
          "infty",
          "resume",
          "t",
          "--script",
          "examples/infty-demo.json",
          "--max-turns",
          "2",
          "--max-wall-minutes",
          "120",
        ],
        home,
      );
      assert.equal(resumed.status, 1, resumed.stderr);
      assert.equal(read().max_wall_ms, 7_200_000, "the old spelling still works");
      const hours = await relay(
        ["infty", "resume", "t", "--script", "examples/infty-demo.json", "--max-turns", "2", "--max-hours", "36"],
        home,
      );
      assert.equal(hours.status, 1, hours.stderr);
      assert.equal(read().max_wall_ms, 36 * 3_600_000, "--max-hours is in hours");
      const both = await relay(["infty", "resume", "t", "--max-hours", "2", "--max-wall", "2h"], home);
      assert.equal(both.status, 2);
      assert.match(both.stderr, /cannot be used with option '--max-wall/);
      await relay(
        [
          "infty",
          "resume",
          "t",
          "--script",
          "examples/infty-demo.json",
          "--max-turns",
          "2",
          "--max-wall-minutes",
          "120",
        ],
        home,
      );
      assert.equal(read().role_timeout_ms, 90_000, "kept without its flag");
      assert.equal(read().settings.code_mode, true, "kept without its flag");
      assert.deepEqual(read().settings.capability_roots, [
        { id: `local:${home}`, location: { type: "environment", environmentId: "local", path: home } },
      ]);
      const status = await relay(["infty", "status", "t"], home);
      assert.match(status.stdout, /of 2h\n/);
      assert.match(status.stdout, /code mode on; capability roots local:/);

      writeFileSync(
        file,
        JSON.stringify({ ...read(), max_turns: 0, settings: { ...read().settings, roles: { solver: { model: "" } } } }),
      );
      for (const args of [
        ["infty", "status", "t"],
        ["infty", "resume", "t", "--script", "examples/infty-demo.json"],
      ]) {
        const r = await relay(args, home);
        assert.equal(r.status, 2, r.stderr);
        assert.match(
          r.stderr,
          /run\.json does not match the run format:\n {2}- max_turns must be at least 1 \(got 0\)\n {2}- settings\.roles\.solver\.model must not be empty \(got ""\)/,
        );
        assert.match(
          r.stderr,
          /Fix: correct max_turns, settings\.roles\.solver\.model(, settings\.roles\.solver\.[a-z_]+)* in .*run\.json as said above/,
        );
      }
      const list = await relay(["infty", "list"], home);
      assert.match(
        list.stderr,
        /warning: skipped an unreadable run: .*run\.json does not match the run format:\n {2}- max_turns must be at least 1/,
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

function relay(args: string[], home: string) {
  return runRelayAsync(args, { ...process.env, RELAY_HOME: home });
}
