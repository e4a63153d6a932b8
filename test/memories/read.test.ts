import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import {
  memoryInstructions,
  parseCitations,
  recordCitationUsage,
  sessionMemories,
  sessionMemoryBlock,
  sessionMemoryRead,
  stripCitations,
} from "../../src/memories/read.ts";
import { getOutput } from "../../src/memories/store/outputs.ts";
import { markStage1Succeeded, tryClaimStage1 } from "../../src/memories/store/stage1.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { openDb, sqliteSkip, tempHome } from "./support.ts";

const CITED = (ids: string[]) =>
  `Done.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:10-12|note=[parser fix]\nrollout_summaries/x.md:1-3|note=[has | pipes]\nbroken line\n</citation_entries>\n<rollout_ids>\n${ids.join("\n")}\n</rollout_ids>\n</oai-mem-citation>`;

async function seed(dbFile: string, id: string) {
  const db = await openDb(dbFile);
  try {
    const c = await tryClaimStage1(db, {
      threadId: id,
      sourceUpdatedAt: 100,
      workerId: "w",
      leaseSeconds: 60,
      maxRunningJobs: 8,
      now: 1000,
    });
    assert.ok("ok" in c && c.ok.kind === "claimed");
    await markStage1Succeeded(
      db,
      id,
      c.ok.token,
      100,
      { rawMemory: "r", rolloutSummary: "s", rolloutSlug: null },
      1000,
    );
  } finally {
    await db.close();
  }
}

describe("read path", { skip: sqliteSkip }, () => {
  test("memoryInstructions: none without a summary; bounded by tokens with head and tail kept", async () => {
    await using h = tempHome();
    assert.equal(await memoryInstructions(h.home), undefined);
    mkdirSync(h.memories, { recursive: true });
    writeFileSync(
      path.join(h.memories, "memory_summary.md"),
      `v1\n\n## User Profile\nHEAD ${"x".repeat(50_000)} TAIL\n`,
    );
    const block = (await memoryInstructions(h.home, 1000))!;
    assert.ok(block.includes("HEAD") && block.includes("TAIL") && block.includes("tokens truncated"));
    assert.ok(block.length < 6000);
    assert.ok(block.includes(h.memories));
    assert.equal(await sessionMemoryBlock(h.home, { RELAY_NO_MEMORIES: "1" }), undefined);
    writeFileSync(path.join(h.home, "config.toml"), "[memories]\nuse_memories = false\n");
    assert.equal(await sessionMemoryBlock(h.home, {}), undefined);
  });

  test("a summary or settings that cannot be read is said, not swallowed; no summary yet is silent", async () => {
    await using h = tempHome();
    assert.deepEqual(await sessionMemoryRead(h.home, {}), {}, "no summary yet");
    mkdirSync(path.join(h.memories, "memory_summary.md"), { recursive: true });
    const unreadable = await sessionMemoryRead(h.home, {});
    assert.equal(unreadable.text, undefined);
    assert.match(
      unreadable.warning ?? "",
      /^memories were not injected: .*memory_summary\.md could not be read \(.*EISDIR/,
    );
    writeFileSync(path.join(h.home, "config.toml"), "[memories]\nuse_memories = 3\n");
    assert.match(
      (await sessionMemoryRead(h.home, {})).warning ?? "",
      /^memories were not injected: .*config\.toml.*use_memories/s,
    );
  });

  test("parseCitations: entries split at the last note marker, ids de-duplicated, blocks stripped", () => {
    const c = parseCitations(CITED(["a", "b", "a"]))!;
    assert.deepEqual(c.threadIds, ["a", "b"]);
    assert.deepEqual(c.entries, [
      { path: "MEMORY.md", lineStart: 10, lineEnd: 12, note: "parser fix" },
      { path: "rollout_summaries/x.md", lineStart: 1, lineEnd: 3, note: "has | pipes" },
    ]);
    assert.equal(parseCitations("no citations"), undefined);
    assert.equal(stripCitations(CITED(["a"])), "Done.");
  });

  test("recordCitationUsage raises usage_count per cited id", async () => {
    await using h = tempHome();
    await seed(h.dbFile, "t1");
    const r = await recordCitationUsage(h.home, CITED(["t1", "missing"]), h.dbFile);
    assert.deepEqual(r, { ok: 1 });
    const db = await openDb(h.dbFile);
    try {
      const o = await getOutput(db, "t1");
      assert.ok("ok" in o && o.ok?.usage_count === 1);
    } finally {
      await db.close();
    }
  });

  test("a session gets the summary as developer instructions, and its citations count", async () => {
    await using h = await harness();
    mkdirSync(path.join(h.home, "memories"), { recursive: true });
    writeFileSync(
      path.join(h.home, "memories", "memory_summary.md"),
      "v1\n\n## User Profile\n- prefers bun MEMORY-MARKER\n",
    );
    await seed(path.join(h.home, "state.sqlite"), "t9");
    h.server.enqueue(reply().text(CITED(["t9"])));
    // The store the CLI wires into every session it opens.
    const r = await h.run({ prompt: "hello", memories: sessionMemories });
    assert.ok("ok" in r, JSON.stringify(r));
    const first = JSON.stringify(inputOf(h.server.requests[0]!.body));
    assert.ok(first.includes("MEMORY-MARKER"));
    const db = await openDb(path.join(h.home, "state.sqlite"));
    try {
      const o = await getOutput(db, "t9");
      assert.ok("ok" in o && o.ok?.usage_count === 1);
    } finally {
      await db.close();
    }
    // Disabled: no injection.
    process.env.RELAY_NO_MEMORIES = "1";
    try {
      h.server.enqueue(reply().text("ok"));
      await h.run({ prompt: "again", memories: sessionMemories });
      assert.ok(!JSON.stringify(inputOf(h.server.requests[1]!.body)).includes("MEMORY-MARKER"));
    } finally {
      delete process.env.RELAY_NO_MEMORIES;
    }
    // `relay run --no-memories`: no injection and citations are not counted.
    h.server.enqueue(reply().text(CITED(["t9"])));
    await h.run({ prompt: "third" });
    assert.ok(!JSON.stringify(inputOf(h.server.requests[2]!.body)).includes("MEMORY-MARKER"));
    const db2 = await openDb(path.join(h.home, "state.sqlite"));
    try {
      const o = await getOutput(db2, "t9");
      assert.ok("ok" in o && o.ok?.usage_count === 1, "a session without memories does not count citations");
    } finally {
      await db2.close();
    }
  });
});
