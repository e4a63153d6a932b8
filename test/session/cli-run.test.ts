import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { appendFileSync, type Dirent, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { SessionEventSchema } from "../../src/contracts/events.ts";
import { findTree } from "../../src/process/kill-tree.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { isAlive } from "../support/executor.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { waitFor } from "../support/wait.ts";
import { harness, inputOf } from "./run-support.ts";

function relayEnv(home: string, extra: Record<string, string> = {}) {
  return { ...process.env, RELAY_HOME: home, NO_COLOR: "1", ...extra };
}

describe("relay run CLI", () => {
  test("the CLI wires the memory store into its session: the summary is injected, and --no-memories leaves it out", async () => {
    await using h = await harness();
    mkdirSync(path.join(h.home, "memories"), { recursive: true });
    writeFileSync(
      path.join(h.home, "memories", "memory_summary.md"),
      "v1\n\n## User Profile\n- prefers bun CLI-MEMORY-MARKER\n",
    );
    const args = [
      "--base-url",
      h.server.baseUrl,
      "-m",
      "test-model",
      "--sandbox",
      "danger-full-access",
      "-C",
      h.workspace,
    ];
    h.server.enqueue(reply().text("ok"));
    const withMemories = await runRelay([...args, "hello"], relayEnv(h.home));
    assert.equal(withMemories.status, 0, withMemories.stderr);
    assert.ok(h.server.requests[0]!.rawBody.includes("CLI-MEMORY-MARKER"), "injected");
    h.server.enqueue(reply().text("ok"));
    const without = await runRelay([...args, "--no-memories", "hello"], relayEnv(h.home));
    assert.equal(without.status, 0, without.stderr);
    assert.ok(!h.server.requests[1]!.rawBody.includes("CLI-MEMORY-MARKER"), "not injected");
  });

  test("SIGKILL mid-tool-call, a torn last line, then --resume last continues the turn", async () => {
    await using h = await harness();
    h.server.enqueue(
      reply()
        .text("starting the long job")
        .toolCall("exec_command", { cmd: "sleep 300; echo never", yield_time_ms: 30000 }, { callId: "call_long" }),
    );
    const [cmd, ...pre] = relayArgv();
    const child = spawn(
      cmd!,
      [
        ...pre,
        "run",
        "--base-url",
        h.server.baseUrl,
        "-m",
        "test-model",
        "--sandbox",
        "danger-full-access",
        "-C",
        h.workspace,
        "run the long job",
      ],
      {
        cwd: REPO_ROOT,
        env: relayEnv(h.home),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let rolloutPath = "";
    // Wait until the call is on disk and its process is running.
    await waitFor(() => {
      const files = findSync(h.home);
      rolloutPath = files[0] ?? "";
      return (
        rolloutPath !== "" && readFileSync(rolloutPath, "utf8").includes('"call_long"') && findSleep() !== undefined
      );
    }, "the tool call to start");
    const sleeper = findSleep()!;
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    await waitFor(() => !isAlive(sleeper), "the orphaned executor's command to die with it");
    appendFileSync(rolloutPath, '{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_it');

    h.server.enqueue(reply().text("The job was interrupted; I checked and it is safe to rerun."));
    const r = await runRelay(
      ["--base-url", h.server.baseUrl, "-m", "test-model", "--resume", "last"],
      relayEnv(h.home),
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /torn last line/);
    assert.match(r.stderr, /1 tool call\(s\) were cut off/);
    assert.match(r.stdout, /safe to rerun/);
    const input = inputOf(h.server.requests[1]!.body);
    const out = input.find((i) => i.type === "function_call_output" && i.call_id === "call_long");
    assert.match(out?.output, /^aborted: the previous run ended before this tool call finished/);
    assert.ok(JSON.stringify(input).includes("run the long job"), "the original request is still in history");
    const files = await listRollouts(h.home);
    assert.equal(files.length, 1, "resume appended to the same rollout");

    function findSleep(): number | undefined {
      if (!child.pid) return undefined;
      const tree = findTree(child.pid);
      for (const pid of tree) {
        try {
          if (readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\u000030")) return pid;
        } catch {
          // gone
        }
      }
      return undefined;
    }
  });

  test("--json prints one schema-valid event per line; exit 0", async () => {
    await using h = await harness();
    h.server.enqueue(reply().toolCall("exec_command", { cmd: "echo json-mode" }), reply().text("ok"));
    const r = await runRelay(
      ["--json", "--base-url", h.server.baseUrl, "-m", "m", "-s", "danger-full-access", "-C", h.workspace, "go"],
      relayEnv(h.home),
    );
    assert.equal(r.status, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => SessionEventSchema.parse(JSON.parse(l)));
    assert.equal(events[0]!.type, "session_started");
    assert.ok(events.some((e) => e.type === "tool_result" && e.output.includes("json-mode")));
    assert.equal(events.at(-1)!.type, "turn_completed");
  });

  test("bad flags and broken config exit 2 with the fix in the message", async () => {
    await using h = await harness();
    const badPolicy = await runRelay(["--approval", "sometimes", "x"], relayEnv(h.home));
    assert.equal(badPolicy.status, 2);
    assert.match(badPolicy.stderr, /Allowed choices are untrusted, on-request, never/);
    writeFileSync(path.join(h.home, "config.toml"), 'approval_policy = "sometimes"\n');
    const badConfig = await runRelay(["x"], relayEnv(h.home));
    assert.equal(badConfig.status, 2);
    assert.match(
      badConfig.stderr,
      /config\.toml.*approval_policy must be one of untrusted, on-request, never \(got "sometimes"\)/s,
    );
    writeFileSync(path.join(h.home, "config.toml"), "model = \n");
    const syntax = await runRelay(["x"], relayEnv(h.home));
    assert.equal(syntax.status, 2);
    assert.match(syntax.stderr, /config\.toml:1:\d+/);
    writeFileSync(path.join(h.home, "config.toml"), "");
    const noPrompt = await runRelay([], relayEnv(h.home));
    assert.equal(noPrompt.status, 2);
    assert.match(noPrompt.stderr, /a prompt is required/);
    const noSession = await runRelay(["--resume", "deadbeef-0000", "x"], relayEnv(h.home));
    assert.equal(noSession.status, 2, noSession.stderr);
  });

  test("a model failure exits 1 and says how to resume", async () => {
    await using h = await harness();
    const r = await runRelay(["--base-url", "http://127.0.0.1:9/v1", "-m", "m", "x"], relayEnv(h.home));
    assert.equal(r.status, 1);
    assert.match(r.stderr, /relay run --resume [0-9a-f-]{36}/);
  });
});

function findSync(home: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".jsonl")) out.push(p);
    }
  };
  walk(path.join(home, "sessions"));
  return out;
}

function runRelay(args: string[], env: NodeJS.ProcessEnv) {
  return runRelayAsync(["run", ...args], env);
}
