/**
 * The checkpoint list (relay-checkpoints.jsonl beside the repository): what listing and restore
 * read instead of every commit; a list a crash left short is not trusted, and a resume writes it
 * again.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { checkListed, gitdirOf, listCheckpoints } from "../../src/infty/checkpoints.ts";
import { runFirstTimeline, setup } from "../support/infty-timeline.ts";

describe("the checkpoint list", () => {
  test("one line per checkpoint, as the commits say; a list short of the tip, or with a gap, is not used, and is written again", async () => {
    await using t = await setup();
    const run = await runFirstTimeline(t, "l");
    const file = path.join(gitdirOf(run.runDir), "relay-checkpoints.jsonl");
    const lines = readFileSync(file, "utf8").trim().split("\n");
    assert.equal(lines.length, run.captured.length);
    const listed = await listCheckpoints(run.runDir);
    assert.ok("ok" in listed);
    assert.deepEqual(
      listed.ok.map((c) => c.id),
      run.captured.map((c) => c.id),
    );
    assert.deepEqual(
      lines.map((l) => JSON.parse(l) as unknown),
      listed.ok,
    );
    // As a crash between the branch's move and the append leaves it, and with a line lost in between:
    for (const broken of [lines.slice(0, -1), [...lines.slice(0, 2), ...lines.slice(3)]]) {
      writeFileSync(file, broken.join("\n") + "\n");
      const fromCommits = await listCheckpoints(run.runDir);
      assert.ok("ok" in fromCommits);
      assert.deepEqual(fromCommits.ok, listed.ok, "read from the commits instead");
      await checkListed(run.runDir);
      assert.deepEqual(readFileSync(file, "utf8").trim().split("\n"), lines, "written again");
    }
  });
});
