/**
 * A fresh machine: RELAY_HOME (or ~/.relay) does not exist yet. Every documented first command
 * works, and the cron line from docs/memories.md runs as written.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-fresh-home-"));
let n = 0;
/** An environment whose RELAY_HOME and HOME do not exist yet. */
function fresh(): { env: NodeJS.ProcessEnv; home: string } {
  const dir = path.join(base, `m${++n}`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: path.join(dir, "user"),
    RELAY_HOME: path.join(dir, "relay-home"),
  };
  delete env.OPENAI_API_KEY;
  return { env, home: env.RELAY_HOME! };
}

describe("a fresh RELAY_HOME", () => {
  after(() => rmSync(base, { recursive: true, force: true }));

  const commands: Array<{ args: string[]; out: RegExp }> = [
    { args: ["--help"], out: /Usage: relay/ },
    { args: ["memories", "consolidate", "--extractor", "heuristic"], out: /phase1 scanned=0/ },
    { args: ["memories", "status"], out: /state DB: / },
    { args: ["memories", "list"], out: /no memories yet/ },
    { args: ["infty", "list"], out: /no runs yet/ },
  ];
  for (const c of commands) {
    test(`relay ${c.args.join(" ")} works as the very first command`, async () => {
      const { env } = fresh();
      const r = await runRelayAsync(c.args, env);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout + r.stderr, c.out);
    });
  }

  test("relay doctor on a fresh home creates it and reports it writable", async () => {
    const { env, home } = fresh();
    const r = await runRelayAsync(["doctor", "--json"], env);
    const report = JSON.parse(r.stdout) as { checks: Array<{ name: string; status: string }> };
    assert.equal(report.checks.find((c) => c.name === "relay home")?.status, "ok");
    assert.ok(existsSync(home));
  });

  test("a scripted relay run as the first command saves its rollout in the new home", async () => {
    const { env, home } = fresh();
    const ws = path.join(base, `ws${n}`);
    mkdirSync(ws);
    const r = await runRelayAsync(
      [
        "run",
        "--script",
        "examples/demo-script.json",
        "--approval",
        "never",
        "--sandbox",
        "danger-full-access",
        "-C",
        ws,
        "go",
      ],
      env,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(path.join(home, "sessions")));
  });

  test("the cron line of docs/memories.md runs as cron runs it (env -i, PATH=/usr/bin:/bin) on a machine with no ~/.relay", () => {
    const doc = readFileSync(path.join(REPO_ROOT, "docs/memories.md"), "utf8");
    const line = /^\*\/30 \* \* \* \* (.+) # relay memories schedule$/m.exec(doc)?.[1];
    assert.ok(line, "docs/memories.md has the cron line");
    const dir = path.join(base, "cron");
    const bin = path.join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    // The documented binary and home, put where this machine has them.
    const shim = path.join(bin, "relay");
    spawnSync("sh", [
      "-c",
      `printf '#!/bin/sh\\nexec %s "$@"\\n' ${JSON.stringify(joinCommandLine(relayArgv()))} > ${shim} && chmod +x ${shim}`,
    ]);
    const home = path.join(dir, "home", ".relay");
    const here = line.replaceAll("/usr/local/bin/relay", shim).replaceAll("/home/you/.relay", home);
    const r = spawnSync("env", ["-i", "PATH=/usr/bin:/bin", "sh", "-c", here], { encoding: "utf8" });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(
      readFileSync(path.join(home, "logs", "memories.log"), "utf8"),
      /^\d{4}-\d\d-\d\dT\S+Z relay memories: phase1 scanned=0/,
    );
  });
});
