/** process/kill-tree.ts: several trees killed with one read of /proc, by group, parent chain and marker. */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { killTreesNow, MARKER_VAR } from "../../src/process/kill-tree.ts";
import { procStatFields } from "../../src/util/proc-stat.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

const skip = process.platform === "linux" ? false : "process trees are found through /proc (Linux)";
skipBecause("kill-tree", skip);

/** Host pids whose command line is exactly `argv`. */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join("\0")}\0`;
  return readdirSync("/proc").flatMap((e) => {
    if (!/^\d+$/.test(e)) return [];
    try {
      return readFileSync(`/proc/${e}/cmdline`, "latin1") === want ? [Number(e)] : [];
    } catch {
      return [];
    }
  });
}

/** Running, as opposed to gone or a zombie (an orphan waits for the host's init to collect it). */
function running(pid: number): boolean {
  const state = procStatFields(pid)?.[0];
  return state !== undefined && state !== "Z" && state !== "X";
}

/** A shell with the marker whose child leaves its group and session (setsid): found by parent chain, then by marker alone. */
function tree(marker: string): { shell: ChildProcess; sleeper: string[] } {
  const sleeper = ["sleep", `3000.${process.pid}${Math.floor(Math.random() * 1e6)}`];
  const shell = spawn("sh", ["-c", `setsid ${sleeper.join(" ")} & wait`], {
    env: { ...process.env, [MARKER_VAR]: marker },
    stdio: "ignore",
    detached: true,
  });
  return { shell, sleeper };
}

describe("kill-tree", { skip }, () => {
  test("killTreesNow ends every tree it is given, escaped children too, and leaves another marker's tree alone", async () => {
    const a = tree(`kt-${process.pid}-a`);
    const b = tree(`kt-${process.pid}-b`);
    const spared = tree(`kt-${process.pid}-c`);
    await waitFor(() => [a, b, spared].every((t) => pidsRunning(t.sleeper).length === 1), "the three sleepers to run");
    const sleepers = [a, b].map((t) => pidsRunning(t.sleeper)[0]!);
    const survivor = pidsRunning(spared.sleeper)[0]!;
    try {
      killTreesNow([
        { leader: a.shell.pid!, marker: `kt-${process.pid}-a` },
        { leader: b.shell.pid!, marker: `kt-${process.pid}-b` },
      ]);
      await waitFor(() => sleepers.every((p) => !running(p)), `the escaped sleepers (${sleepers.join(", ")}) to die`);
      await waitFor(() => a.shell.exitCode !== null || a.shell.signalCode !== null, "the first shell to end");
      assert.ok(running(survivor), "the third tree was not given, and lives");
    } finally {
      killTreesNow([{ leader: spared.shell.pid!, marker: `kt-${process.pid}-c` }]);
    }
    await waitFor(() => !running(survivor), "the third tree to die when it is given");
    killTreesNow([]);
  });
});
