/** `relay infty logs`: the last N events read from the end, and --follow until the run finishes. */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { FileLease } from "../../src/infty/lease-file.ts";
import { followLines, linesFromEnd, tailLines } from "../../src/infty/log-tail.ts";
import { RunStore } from "../../src/infty/run-store.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { until } from "../support/wait.ts";

function tempDir(): { dir: string } & Disposable {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-logs-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

describe("the end of a run's log", () => {
  test("the last N whole lines, across read chunks and long lines; a line still being written is left out", async () => {
    using d = tempDir();
    const file = path.join(d.dir, "events.jsonl");
    const lines = Array.from({ length: 3000 }, (_, i) =>
      JSON.stringify({ i, pad: i % 500 === 0 ? "x".repeat(100_000) : "" }),
    );
    writeFileSync(file, lines.join("\n") + "\n" + '{"torn":');
    for (const n of [1, 3, 17, 1000, 5000]) {
      const r = await tailLines(file, n);
      assert.deepEqual(r.lines, lines.slice(-n), `n=${n}`);
    }
    assert.deepEqual(await tailLines(path.join(d.dir, "missing"), 5), { lines: [], end: 0 });
  });
});

describe("following a log", () => {
  test("a line is given out only once its newline is there, even when a read cuts it (and a character) in two", async () => {
    using d = tempDir();
    const file = path.join(d.dir, "events.jsonl");
    writeFileSync(file, "");
    const got: string[] = [];
    let seenPart!: () => void;
    const partSeen = new Promise<void>((r) => (seenPart = r));
    let polls = 0;
    const following = followLines(file, {
      from: 0,
      onLine: (l) => got.push(l),
      last: (l) => l.includes("end"),
      pollMs: 1,
      idleEvery: 1,
      // Called on each poll that found nothing new: after the first part was read, the second goes in.
      idle: async () => {
        if (++polls === 1) seenPart();
        return undefined;
      },
    });
    appendFileSync(file, Buffer.from('{"message":"h\u00e9', "utf8").subarray(0, -1));
    await until(partSeen, "the follower to read the first part");
    assert.deepEqual(got, [], "nothing given out for a line without its newline");
    appendFileSync(
      file,
      Buffer.concat([Buffer.from("\u00e9", "utf8").subarray(1), Buffer.from('llo"}\n{"message":"end"}\n')]),
    );
    assert.equal(await following, "the run finished");
    assert.deepEqual(got, ['{"message":"h\u00e9llo"}', '{"message":"end"}']);
  });
});

describe("relay infty logs --follow", () => {
  test("prints what is there, then each new event (a torn line only once whole), and ends with the run", async () => {
    using d = tempDir();
    const created = await RunStore.create(
      d.dir,
      {
        run_id: "f",
        objective: "o",
        verifiers: 1,
        consensus: "all",
        max_turns: 1,
        max_wall_ms: 60_000,
        settings: undefined,
        role_timeout_ms: undefined,
        repo: undefined,
      },
      null,
    );
    assert.ok("ok" in created);
    const store = created.ok;
    // This process drives the run, as far as the lease says.
    const lease = await new FileLease(store.dir, "f").acquire();
    assert.ok("ok" in lease);
    await store.log({ type: "warning", message: "before the follow" });
    const [cmd, ...pre] = relayArgv();
    const child = spawn(cmd!, [...pre, "infty", "logs", "f", "--follow", "--json"], {
      env: { ...process.env, RELAY_HOME: d.dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    const seen = (re: RegExp) =>
      until(
        new Promise<void>((resolve) => {
          const check = () => re.test(out) && resolve();
          child.stdout.on("data", check);
          check();
        }),
        `${re}`,
      );
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    const exited = new Promise<number | null>((r) => child.once("exit", r));
    await seen(/before the follow/);
    await store.log({ type: "warning", message: "while following" });
    await seen(/while following/);
    await store.log({ type: "run_finished", status: "complete", detail: "done" });
    assert.equal(await exited, 0, err);
    assert.deepEqual(
      out
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { message?: string; type: string }).message ?? l.includes("run_finished")),
      ["before the follow", "while following", true],
    );
    assert.match(err, /the run finished; no more events to follow/);
    await lease.ok.release();
  });

  test("a run nobody drives: its events, then a word that there is nothing to follow", async () => {
    using d = tempDir();
    const created = await RunStore.create(
      d.dir,
      {
        run_id: "done",
        objective: "o",
        verifiers: 1,
        consensus: "all",
        max_turns: 1,
        max_wall_ms: 60_000,
        settings: undefined,
        role_timeout_ms: undefined,
        repo: undefined,
      },
      null,
    );
    assert.ok("ok" in created);
    await created.ok.update({ status: "complete" });
    await created.ok.log({ type: "run_finished", status: "complete", detail: "done" });
    const r = await runRelayAsync(["infty", "logs", "done", "-f"], { ...process.env, RELAY_HOME: d.dir });
    assert.equal(r.status, 0);
    assert.match(r.stdout, / run_finished status=complete detail=done\n$/);
    assert.match(r.stderr, /run done is complete, not running; nothing to follow/);
  });
});

describe("lines from the end", () => {
  test("every whole line, last first, across chunks and lines longer than a chunk; a torn last line is left out", async () => {
    using d = tempDir();
    const file = path.join(d.dir, "x.jsonl");
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} ${i % 300 === 0 ? "é".repeat(70_000) : ""}`);
    for (const tail of ["", "torn, no newline", "x".repeat(200_000)]) {
      writeFileSync(file, lines.join("\n") + "\n" + tail);
      const got: string[] = [];
      for await (const l of linesFromEnd(file)) got.push(l);
      assert.deepEqual(got, [...lines].reverse(), `tail ${tail.slice(0, 10)}`);
    }
    writeFileSync(file, "only a torn line");
    const none: string[] = [];
    for await (const l of linesFromEnd(file)) none.push(l);
    assert.deepEqual(none, []);
  });
});
