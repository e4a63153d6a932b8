/**
 * executor/relay-path-owner.ts: a SIGKILLed executor leaves its relay-path-* directory behind;
 * the next executor to run a command removes it, and only directories whose recorded owner is
 * gone: never a live executor's, nor one that records no owner or another pid namespace's.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { ownerOf, selfOwner } from "../../src/executor/relay-path-owner.ts";
import { exec, startExecutor } from "../support/executor.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

const skip = skipBecause("relay-path sweep", process.platform !== "linux" && "owner records need Linux's /proc");

describe("relay-path directories of gone executors", { skip }, () => {
  test("a new executor removes the directories of SIGKILLed executors and of a reused pid, and keeps the rest", async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "relay-sweep-"));
    const home = path.join(tmp, "home");
    mkdirSync(home);
    const env = { TMPDIR: tmp, RELAY_HOME: home, RELAY_LOG: "debug" };
    const dirOf = (pid: number | undefined) => readdirSync(tmp).filter((n) => n.startsWith(`relay-path-${pid}-`));
    const log = path.join(home, "logs", "relay.log");
    const logged = (pid: number | undefined, msg: string) =>
      existsSync(log) &&
      readFileSync(log, "utf8")
        .split("\n")
        .some((l) => l.includes(`"pid":${pid},`) && l.includes(msg));
    /**
     * Starts an executor and runs a command, which makes its relay-path directory, and waits for
     * the sweep that follows (off the command's path), so that it cannot run after a later kill.
     */
    const started = async () => {
      const ex = await startExecutor(env);
      await exec(ex, { command: ["true"] });
      await waitFor(() => logged(ex.pid, "relay-path sweep done"), `executor ${ex.pid}'s sweep to finish`);
      assert.equal(
        dirOf(ex.pid).length,
        1,
        `one relay-path directory of executor ${ex.pid}: ${readdirSync(tmp).join(" ")}`,
      );
      return { ex, dir: dirOf(ex.pid)[0]! };
    };
    const live = await started();
    try {
      const doomed = [await started(), await started()];
      for (const k of doomed) {
        k.ex.kill("SIGKILL");
        await k.ex.exited;
      }
      const killed = doomed.map((k) => k.dir);
      assert.deepEqual(
        killed.filter((d) => !existsSync(path.join(tmp, d))),
        [],
        "a SIGKILLed executor leaves its directory",
      );
      const me = selfOwner()!;
      const dead = ownerOf(killed[0]!)!;
      const reusedPid = `relay-path-${me.pid}-${Number(me.start) + 1}-${me.pidns}-Reused`;
      const otherNamespace = `relay-path-${dead.pid}-${dead.start}-1-OtherN`;
      const noOwner = "relay-path-Old123";
      for (const d of [reusedPid, otherNamespace, noOwner]) mkdirSync(path.join(tmp, d));

      const fresh = await started();
      try {
        assert.ok(
          logged(fresh.ex.pid, "removed the relay-path directories of gone executors"),
          "the new executor's sweep is logged",
        );
        assert.deepEqual(
          readdirSync(tmp)
            .filter((n) => n.startsWith("relay-path-"))
            .sort(),
          [live.dir, fresh.dir, otherNamespace, noOwner].sort(),
        );
      } finally {
        await fresh.ex.shutdown();
      }
    } finally {
      await live.ex.shutdown();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
