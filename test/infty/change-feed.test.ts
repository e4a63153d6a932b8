/**
 * The change feed a handoff reads: every change made before a take is in it (the take waits for
 * its watchers to catch up, through a marker of its own), and its markers are never changes of
 * the run, nor left behind by a driver killed mid-take.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ChangeFeed } from "../../src/infty/change-feed.ts";
import { skipBecause } from "../support/skip.ts";

const DIRS = ["artifacts", "memory"] as const;
const skip = skipBecause(
  "the change feed's watcher tests",
  !process.versions.bun && "it needs Bun's recursive file watcher (the runtime relay's binary runs)",
);

describe("the change feed", { skip }, () => {
  let root = "";
  before(() => {
    root = mkdtempSync(path.join(os.tmpdir(), "relay-feed-"));
    for (const d of DIRS) mkdirSync(path.join(root, d, "deep", "er"), { recursive: true });
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("a file written right before a take is in it, every time; the take's markers are not", async () => {
    const feed = await ChangeFeed.start(root, DIRS);
    try {
      assert.deepEqual(await feed.take(), { all: true }, "the first take looks at everything");
      for (let i = 0; i < 60; i++) {
        const rel = `${DIRS[i % 2]}/deep/er/f-${i}.txt`;
        writeFileSync(path.join(root, rel), `${i}\n`);
        const changes = await feed.take();
        assert.equal(changes.all, false, `take ${i} was a full look`);
        if (changes.all) continue;
        assert.ok(changes.paths.has(rel), `take ${i} misses ${rel}: ${[...changes.paths].join(", ")}`);
        const markers = [...changes.paths].filter((p) => p.includes(".relay-change-feed-"));
        assert.deepEqual(markers, [], "a take's markers are not changes");
      }
      for (const d of DIRS) assert.deepEqual(readdirSync(path.join(root, d)), ["deep"], `no marker left in ${d}`);
    } finally {
      feed.close();
    }
  });

  test("markers a killed driver left behind are removed when the next feed starts", async () => {
    const stale = path.join(root, "artifacts", ".relay-change-feed-99999-3");
    writeFileSync(stale, "");
    const feed = await ChangeFeed.start(root, DIRS);
    feed.close();
    assert.equal(existsSync(stale), false);
  });
});
