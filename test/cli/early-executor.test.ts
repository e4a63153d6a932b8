/**
 * `relay run` starts its executor before it has read its own command line (main.ts), and the
 * session takes that one: one executor per run. Where the run does not use this binary's
 * executor (a config.toml `executor` command line), the early one is shut down, and with
 * --executor none is started.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { type LogLine, logFile, logLines } from "../support/log-file.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { waitFor } from "../support/wait.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-early-exec-"));
after(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

/** A fresh home (with `config` as its config.toml), a workspace and a one-turn script. */
function setup(config = ""): { env: NodeJS.ProcessEnv; ws: string; script: string; home: string } {
  const home = path.join(base, `h${++n}`);
  const ws = path.join(base, `ws${n}`);
  mkdirSync(home);
  mkdirSync(ws);
  if (config) writeFileSync(path.join(home, "config.toml"), config);
  const script = path.join(base, `script${n}.json`);
  writeFileSync(script, JSON.stringify({ turns: [{ text: "done" }] }));
  const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home, RELAY_LOG: "info" };
  return { env, ws, script, home };
}

const log = (home: string) => logLines(logFile(home));

const executorStarts = (lines: LogLine[]) => lines.filter((l) => l.msg === "start" && l.fields?.command === "executor");

describe("relay run's early executor", () => {
  test("a run starts one executor, and its session runs on it", async () => {
    const { env, ws, script, home } = setup();
    const r = await runRelayAsync(["run", "-C", ws, "--script", script, "--approval", "never", "hi"], env);
    assert.equal(r.status, 0, r.stderr);
    const lines = log(home);
    const started = executorStarts(lines);
    assert.equal(started.length, 1, JSON.stringify(started));
    const run = lines.find((l) => l.msg === "start" && l.fields?.command === "run")!;
    assert.ok(
      lines.some((l) => l.pid === run.pid && l.msg === "exited" && l.fields?.pid === started[0]!.pid),
      "the run's executor is the one that started early, and the run saw it exit",
    );
  });

  test("a config.toml executor command line: the early one is shut down, the configured one serves", async () => {
    const remote = joinCommandLine([...relayArgv(), "executor"]);
    const { env, ws, script, home } = setup(`executor = ${JSON.stringify(remote)}\n`);
    const r = await runRelayAsync(["run", "-C", ws, "--script", script, "--approval", "never", "hi"], {
      ...env,
      RELAY_LOG: "debug",
    });
    assert.equal(r.status, 0, r.stderr);
    const started = executorStarts(log(home));
    assert.equal(started.length, 2, "the early one and the configured one");
    // Each logs its own end (the early one is told to stop; it would also stop at relay run's exit).
    const ended = (pid: number) => log(home).some((l) => l.pid === pid && l.msg === "exit");
    for (const s of started) await waitFor(() => ended(s.pid), `executor ${s.pid} to end`);
    const used = log(home).find((l) => l.service === "session" && l.msg === "session started");
    assert.equal(used?.fields?.remote, true, "the session ran on the configured executor");
  });

  test("with --executor, no early executor is started", async () => {
    const remote = joinCommandLine([...relayArgv(), "executor"]);
    const { env, ws, script, home } = setup();
    const r = await runRelayAsync(
      ["run", "-C", ws, "--executor", remote, "--script", script, "--approval", "never", "hi"],
      env,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(executorStarts(log(home)).length, 1);
  });
});
