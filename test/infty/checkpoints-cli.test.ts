import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { FileLease } from "../../src/infty/lease-file.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { runFirstTimeline, setup } from "../support/infty-timeline.ts";
import { runRelayAsync } from "../support/self.ts";

describe("relay infty checkpoints / restore (CLI)", () => {
  test("list as text and JSON; restore refuses a live run, restores a stopped one; bad input", async () => {
    await using t = await setup();
    const run = await runFirstTimeline(t, "r");
    const relay = (...args: string[]) => runRelayAsync(args, { ...process.env, RELAY_HOME: t.home });
    const answer = () => readFileSync(path.join(run.runDir, "artifacts/answer.txt"), "utf8");

    const text = await relay("infty", "checkpoints", "r");
    assert.equal(text.status, 0, text.stderr);
    const [header, ...rows] = text.stdout.trim().split("\n");
    assert.match(header!, /^CHECKPOINT +AT +TURN +TRIGGER +SUMMARY$/);
    assert.equal(rows.length, 6);
    assert.match(rows[0]!, /^ckpt-0001 +\S+Z +1 +handoff +solver → verifiers: memory\/claims\/answer.json$/);
    assert.match(rows[3]!, /^ckpt-0004 +.* +verification pass +verifiers → solver: pass \(1\/1 passed\)$/);
    const json = await relay("infty", "checkpoints", "r", "--json");
    const list = JSON.parse(json.stdout) as Array<{
      id: string;
      trigger: string;
      turn: number;
      commit: string;
      at: string;
      summary: string;
    }>;
    assert.deepEqual(
      list.map((c) => [c.id, c.trigger]),
      run.captured.map((c) => [c.id, c.trigger]),
    );
    assert.ok(list.every((c) => /^[0-9a-f]{40}$/.test(c.commit) && !Number.isNaN(Date.parse(c.at))));

    const unknownRun = await relay("infty", "checkpoints", "nope");
    assert.equal(unknownRun.status, 2);
    assert.match(unknownRun.stderr, /no run nope.*relay infty list/);
    const unknownRunRestore = await relay("infty", "restore", "nope", "ckpt-0001");
    assert.equal(unknownRunRestore.status, 2);
    assert.match(unknownRunRestore.stderr, /no run nope/);
    const unknownCkpt = await relay("infty", "restore", "r", "ckpt-0099");
    assert.equal(unknownCkpt.status, 2);
    assert.match(
      unknownCkpt.stderr,
      /run r has no checkpoint "ckpt-0099"; it has 6 \(ckpt-0001 … ckpt-0006\); list them with: relay infty checkpoints r/,
    );

    // A live run: running, and its lease held by a process that is alive (this one).
    const store = await RunStore.load(t.home, "r");
    assert.ok("ok" in store);
    await store.ok.update({ status: "running", heartbeat_at: new Date().toISOString() });
    const held = await new FileLease(run.runDir, "r").acquire();
    assert.ok("ok" in held, JSON.stringify(held));
    const live = await relay("infty", "restore", "r", "ckpt-0002");
    assert.equal(live.status, 1);
    assert.match(
      live.stderr,
      new RegExp(
        `run r is live \\(pid ${process.pid}, .*kill ${process.pid}; it stays resumable\\), then: relay infty restore r ckpt-0002`,
      ),
    );
    assert.equal(answer(), "42\n", "a refused restore changes nothing");

    // The same run after its driver's machine went away: still "running", the lease's heartbeat old.
    const lease = JSON.parse(readFileSync(path.join(run.runDir, "lease.json"), "utf8")) as Record<string, unknown>;
    const old = new Date(Date.now() - 10 * 60_000).toISOString();
    writeFileSync(
      path.join(run.runDir, "lease.json"),
      JSON.stringify({ ...lease, holder: { pid: 4242, start_time: null, host: "gone.example" }, heartbeat_at: old }),
    );
    await store.ok.update({ heartbeat_at: old });
    const restored = await relay("infty", "restore", "r", "2");
    assert.equal(restored.status, 0, restored.stderr);
    assert.match(
      restored.stdout,
      /^restored run r to ckpt-0002 \(.*turn 1, handoff: verifiers → solver: fail \(0\/1 passed\)\)\n/,
    );
    assert.match(
      restored.stdout,
      /solver: rollout cut from \d+ to \d+ bytes; the rest is in .*\.after-ckpt-0002\.jsonl/,
    );
    assert.match(restored.stdout, /continue with: relay infty resume r\n$/);
    assert.equal(answer(), "41\n");
    const status = await relay("infty", "status", "r");
    assert.match(status.stdout, /status: +interrupted — restored to ckpt-0002/);
    assert.match(status.stdout, /checkpoint:\s+ckpt-0002/);
  });

  test("help texts name the new subcommands; --checkpoint-every still parses and says it is ignored", async () => {
    await using t = await setup();
    const relay = (...args: string[]) => runRelayAsync(args, { ...process.env, RELAY_HOME: t.home });
    const help = await relay("infty", "--help");
    assert.match(help.stdout, /checkpoints \[options\] <run-id>/);
    assert.match(help.stdout, /restore \[options\] <run-id> <checkpoint>/);
    const restoreHelp = await relay("infty", "restore", "--help");
    assert.match(restoreHelp.stdout, /<rollout>\.after-<checkpoint>\.jsonl/);
    const old = await relay(
      "infty",
      "run",
      "--no-repo",
      "--run-id",
      "old",
      "--checkpoint-every",
      "3",
      "--sandbox",
      "danger-full-access",
      "--script",
      "examples/infty-demo.json",
      "x",
    );
    assert.equal(old.status, 0, old.stderr);
    assert.match(old.stderr, /--checkpoint-every is ignored: a checkpoint is now taken at every handoff/);
    const list = await relay("infty", "checkpoints", "old", "--json");
    const ids = (JSON.parse(list.stdout) as Array<{ trigger: string }>).map((c) => c.trigger);
    assert.ok(ids.includes("verification_pass") && ids.at(-1) === "delivery", ids.join(" "));
  });
});
