/** Whether a run is live: the pid of the last run_started is found from the end of a long log, also across chunk borders. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { runLiveness } from "../../src/infty/liveness.ts";
import type { RunMeta } from "../../src/infty/run-format.ts";

const state = (status: RunMeta["status"]) => ({ status, heartbeat_at: new Date().toISOString() }) as RunMeta;

describe("run liveness", () => {
  test("the last run_started's pid, after many lines and a line longer than a read chunk", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-liveness-"));
    try {
      const line = (o: object) => JSON.stringify({ at: "t", ...o });
      const lines = [
        line({ type: "run_started", pid: 1 }),
        line({ type: "run_started", pid: process.pid, note: "x".repeat(200_000) }),
      ];
      for (let i = 0; i < 5000; i++)
        lines.push(line({ type: "role", role: "solver", event: { kind: "message", text: `m ${i}` } }));
      writeFileSync(path.join(dir, "events.jsonl"), lines.join("\n") + "\n");
      const l = await runLiveness(dir, state("running"));
      assert.equal(l.pid, process.pid);
      assert.equal(l.live, true);
      writeFileSync(path.join(dir, "events.jsonl"), lines.slice(2).join("\n") + "\n");
      assert.equal((await runLiveness(dir, state("running"))).pid, undefined);
      assert.equal((await runLiveness(dir, state("complete"))).live, false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
