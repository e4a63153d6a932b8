/**
 * No process escapes a kill: a sandboxed command that hides (double fork, setsid, a cleared
 * environment, so no marker and no group or parent chain leads to it) still dies when its
 * executor is SIGKILLed, because it runs in the executor's container (a pid namespace whose
 * init dies with the executor). Every way a command gets there is tried: forked by the init,
 * and, where the init may not spawn, through a helper that joins in place (the compiled
 * binary's single-threaded helper) or forks (confine.c, as from source).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import { type ChildPeer, spawnPeer } from "../../src/protocol/child.ts";
import { probeSandbox } from "../../src/sandbox/index.ts";
import { envWithoutSelfCommand } from "../support/compiled.ts";
import { exec, isAlive, startExecutor } from "../support/executor.ts";
import { sharedRelay } from "../support/shared-relay.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

const support = await probeSandbox();
const builtinSkip =
  support.mechanism === "landlock" ? false : `the built-in sandbox cannot run here: ${support.detail}`;
const compiledSkip = builtinSkip || (!process.versions.bun && "compiling relay needs Bun");
/** RELAY_SANDBOX_SIMULATE parts for the executor. */
const ways: Array<{ label: string; compiled: boolean; simulate: string[]; skip: string | false }> = [
  { label: "compiled binary, the container's init spawns", compiled: true, simulate: [], skip: compiledSkip },
  { label: "compiled binary, helper joins in place", compiled: true, simulate: ["no-init-spawn"], skip: compiledSkip },
  { label: "forked helper", compiled: false, simulate: ["no-init-spawn"], skip: builtinSkip },
];
for (const w of ways) skipBecause(`containment (${w.label})`, w.skip);

/** Host pids whose command line is exactly `argv` (the test's own view of /proc). */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join("\0")}\0`;
  const found: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, "latin1") === want) found.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** A command line no other process has: `sleep` with a unique fractional duration. */
const uniqueSleep = () => ["sleep", `3000.${process.pid}${Math.floor(Math.random() * 1e6)}`];

/** Double fork, setsid and an empty environment: nothing of the executor's is left to track it by. */
const hideScript = (argv: string[]) =>
  `( env -i setsid ${argv.join(" ")} </dev/null >/dev/null 2>&1 & ) ; echo started`;

for (const way of ways) {
  describe(`containment (${way.label})`, { skip: way.skip }, () => {
    let ws = "";
    before(() => {
      ws = mkdtempSync(path.join(os.tmpdir(), "relay-contain-"));
    });
    after(() => rmSync(ws, { recursive: true, force: true }));

    const start = async (simulate: string[] = []): Promise<ChildPeer> => {
      const parts = [...way.simulate, ...simulate];
      const env: Record<string, string> = parts.length ? { RELAY_SANDBOX_SIMULATE: parts.join(",") } : {};
      if (!way.compiled) return startExecutor(env);
      const c = spawnPeer([sharedRelay(), "executor"], {
        env: envWithoutSelfCommand(env),
        name: "compiled-executor",
      });
      assert.ok("ok" in c, JSON.stringify(c));
      return c.ok;
    };
    const policy = (): SandboxPolicy => ({ mode: "workspace-write", writable_roots: [ws], network: false });
    const run = (ex: ChildPeer, script: string) =>
      exec(ex, { command: ["sh", "-c", script], cwd: ws, sandbox: policy(), yield_time_ms: 20_000 });

    test("a hidden daemon outlives the command that started it, and dies with a SIGKILLed executor", async () => {
      const ex = await start();
      const daemon = uniqueSleep();
      const r = await run(ex, hideScript(daemon));
      assert.equal(r.exit_code, 0, r.output);
      await waitFor(() => pidsRunning(daemon).length === 1, "the hidden daemon to be running");
      const [pid] = pidsRunning(daemon);
      assert.ok(!readFileSync(`/proc/${pid}/environ`, "latin1").includes("RELAY_EXEC_MARKER"), "it carries no marker");
      ex.kill("SIGKILL");
      await ex.exited;
      await waitFor(() => !isAlive(pid!), `the daemon (pid ${pid}) to die with the executor`);
    });

    test("a command cannot end the container from inside, and a container killed from outside is made again", async () => {
      const ex = await start();
      try {
        const first = await run(ex, "kill -KILL 1 2>/dev/null; kill -TERM 1 2>/dev/null; readlink /proc/self/ns/pid");
        const stillOne = await run(ex, "readlink /proc/self/ns/pid");
        assert.match(first.output, /^pid:\[\d+\]\n$/);
        assert.equal(stillOne.output, first.output, "pid 1 outlived the signals: the same container");
        const info = await ex.peer.call(ExecutorMethods.info, {});
        assert.ok("ok" in info);
        assert.equal(info.ok.sandbox.containment?.enforced, true);
        assert.match(info.ok.sandbox.containment?.detail ?? "", /pid namespace/);
        const daemon = uniqueSleep();
        await run(ex, hideScript(daemon));
        await waitFor(() => pidsRunning(daemon).length === 1, "the hidden daemon to be running");
        const [daemonPid] = pidsRunning(daemon);
        // The container's init is the daemon's parent (it adopted the orphan); killing it from outside ends the namespace.
        const init = Number(readFileSync(`/proc/${daemonPid}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
        process.kill(init, "SIGKILL");
        await waitFor(() => !isAlive(daemonPid!), "the daemon to die with its container");
        const next = await run(ex, "readlink /proc/self/ns/pid; echo ok");
        assert.equal(next.exit_code, 0, next.output);
        assert.notEqual(next.output.split("\n")[0], stillOne.output.trim(), "a new container");
      } finally {
        await ex.shutdown();
      }
    });

    test('info with containment "start" (a session\'s) answers without waiting for the container; the first command runs in it', async () => {
      const ex = await start();
      try {
        const quick = await ex.peer.call(ExecutorMethods.info, { containment: "start" });
        assert.ok("ok" in quick);
        assert.equal(quick.ok.sandbox.mechanism, "landlock");
        assert.equal(quick.ok.sandbox.containment, undefined, "not reported: the caller did not wait for it");
        const r = await run(ex, "readlink /proc/self/ns/pid");
        assert.equal(r.exit_code, 0, r.output);
        assert.notEqual(
          r.output.trim(),
          readlinkSync("/proc/self/ns/pid"),
          "the container's pid namespace, not the host's",
        );
        const full = await ex.peer.call(ExecutorMethods.info, {});
        assert.ok("ok" in full);
        assert.equal(full.ok.sandbox.containment?.enforced, true, "the default still waits and reports");
      } finally {
        await ex.shutdown();
      }
    });

    test("without user namespaces there is no container: commands still run, and the executor says what is left", async () => {
      const ex = await start(["no-userns"]);
      try {
        const info = await ex.peer.call(ExecutorMethods.info, {});
        assert.ok("ok" in info);
        assert.equal(info.ok.sandbox.containment?.enforced, false);
        assert.match(
          info.ok.sandbox.containment?.detail ?? "",
          /environment marker only.*Full containment needs unprivileged user namespaces/,
        );
        const r = await run(ex, "readlink /proc/self/ns/pid");
        assert.equal(r.exit_code, 0, r.output);
        assert.equal(r.output.trim(), readlinkSync("/proc/self/ns/pid"), "the host's pid namespace");
      } finally {
        await ex.shutdown();
      }
    });
  });
}
