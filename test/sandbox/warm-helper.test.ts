/**
 * The warm sandbox helper: started ahead by the executor where its container's init cannot
 * spawn commands itself (simulated here), it takes its command from stdin. Real processes; the
 * spare's fate is observed through /proc, waiting for the event.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { WARM_POOL_SIZE } from "../../src/sandbox/warm-helper.ts";
import { exec, startExecutor, waitUntil } from "../support/executor.ts";
import { relayArgv } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";

const support = await probeSandbox();
const skip = skipBecause(
  "warm sandbox helpers",
  support.landlock && support.landlock.abi >= 3
    ? false
    : `the built-in sandbox cannot run here: ${support.landlock?.detail ?? support.detail}`,
);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
/** Where the init spawns, no spare is ever started (container-spawner.test.ts checks that). */
const helpersOnly = { RELAY_SANDBOX_SIMULATE: "no-init-spawn" };

/** Pids of warm helpers whose parent is `ppid`. */
function spares(ppid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    const pid = Number(e);
    if (!Number.isInteger(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0");
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent === ppid && cmd.includes("__sandbox-exec") && cmd.includes("--wait")) out.push(pid);
    } catch {
      // gone
    }
  }
  return out;
}

function runHelper(stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [cmd, ...pre] = relayArgv();
  const child = spawn(cmd!, [...pre, "__sandbox-exec", "--wait"], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

describe("warm sandbox helpers", { skip }, () => {
  let ws = "";
  before(() => {
    ws = mkdtempSync(path.join(os.tmpdir(), "relay-warm-"));
    mkdirSync(path.join(ws, ".git"));
  });
  after(() => rmSync(ws, { recursive: true, force: true }));
  const policy: () => SandboxPolicy = () => ({ mode: "workspace-write", writable_roots: [ws], network: false });

  test("a session's sandbox check notes the plan, its start starts the spares; the first command takes one and runs confined", async () => {
    await using ex = await startExecutor(helpersOnly);
    const check = await ex.peer.call(ExecutorMethods.sandboxCheck, { sandbox: policy(), cwd: ws, env });
    assert.ok("ok" in check, JSON.stringify(check));
    assert.deepEqual(spares(ex.pid!), [], "the check alone starts nothing: the session is still being set up");
    assert.ok("ok" in (await ex.peer.call(ExecutorMethods.info, { containment: "start" })));
    assert.ok(await waitUntil(() => spares(ex.pid!).length === WARM_POOL_SIZE), `${WARM_POOL_SIZE} spares are waiting`);
    const r = await exec(ex, {
      command: [
        "sh",
        "-c",
        'wc -c; echo "$RELAY_WARM:$(pwd)"; (echo x > .git/x) 2>/dev/null || echo git-read-only; exit 3',
      ],
      cwd: ws,
      env: { ...env, RELAY_WARM: "env-kept" },
      sandbox: policy(),
    });
    assert.equal(r.exit_code, 3);
    assert.equal(
      r.output,
      `0\nenv-kept:${ws}\ngit-read-only\n`,
      "stdin is empty (/dev/null), env and cwd are the command's",
    );
    const info = await ex.peer.call(ExecutorMethods.info, {});
    assert.ok("ok" in info);
    assert.deepEqual(info.ok.sandbox.warm_helpers, { hits: 1, misses: 0 });
    assert.ok(
      await waitUntil(() => spares(ex.pid!).length === WARM_POOL_SIZE),
      "a new spare replaces the one taken once the command is done",
    );
  });

  test("a spare never outlives its executor, even one killed with SIGKILL", async () => {
    const ex = await startExecutor(helpersOnly);
    await ex.peer.call(ExecutorMethods.sandboxCheck, { sandbox: policy(), cwd: ws, env });
    await ex.peer.call(ExecutorMethods.info, { containment: "start" });
    assert.ok(await waitUntil(() => spares(ex.pid!).length === WARM_POOL_SIZE));
    const waiting = spares(ex.pid!);
    ex.kill("SIGKILL");
    await ex.exited;
    for (const spare of waiting) {
      const gone = await waitUntil(() => {
        try {
          return readFileSync(`/proc/${spare}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
        } catch {
          return true;
        }
      }, `warm helper ${spare} to be gone`);
      assert.ok(gone, `warm helper ${spare} is gone`);
    }
  });

  test("a malformed request or none at all runs nothing and says why", async () => {
    const junk = await runHelper("{not json\n");
    assert.equal(junk.code, 2);
    assert.match(junk.stderr, /warm helper's request is not valid JSON/);
    const shape = await runHelper(
      `${JSON.stringify({ plan: {}, argv: ["sh", "-c", "echo ran"], env: {}, cwd: "/" })}\n`,
    );
    assert.equal(shape.code, 2);
    assert.match(shape.stderr, /request is malformed: plan: abi must be/);
    assert.equal(shape.stdout, "");
    const eof = await runHelper("");
    assert.equal(eof.code, 2);
    assert.equal(eof.stdout, "");
  });
});
