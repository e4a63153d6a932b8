import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { type Extractor, heuristicExtractor, modelExtractor } from "../../src/memories/extract.ts";
import { memoryItems } from "../../src/memories/filter.ts";
import { type Phase1Options, runPhase1 } from "../../src/memories/phase1.ts";
import { getOutput, listOutputs } from "../../src/memories/store/outputs.ts";
import { readStage1Job } from "../../src/memories/store/stage1.ts";
import type { ModelClient, ModelRequest } from "../../src/model/client.ts";
import { createScriptedClient } from "../../src/model/scripted.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { deferred, until } from "../support/wait.ts";
import { DAY, HOUR, ok, openDb, sqliteSkip, tempHome, writeRollout } from "./support.ts";

function opts(o: Partial<Phase1Options> & Pick<Phase1Options, "state" | "relayHome" | "extractor">): Phase1Options {
  return {
    workerId: "test",
    now: Date.now,
    maxAgeDays: 10,
    minIdleHours: 6,
    maxClaims: 16,
    maxRunningJobs: 16,
    concurrency: 4,
    ...o,
  };
}

describe("phase 1", { skip: sqliteSkip }, () => {
  test("filter keeps user/assistant/tool items, drops developer, reasoning, AGENTS.md and skill fragments", async () => {
    await using h = tempHome();
    const r = writeRollout(h.home, {
      mtimeMs: Date.now() - 7 * HOUR,
      user: [
        "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
        "<environment_context>cwd=/w</environment_context>",
        "real request",
      ],
      extraItems: [
        { type: "reasoning", summary: [] },
        { type: "web_search_call", action: {} },
      ],
    });
    const lines = ok(await readRollout(r.path)).lines;
    const items = memoryItems(lines);
    const texts = items.filter((i) => i.type === "message").map((i) => JSON.stringify(i));
    assert.ok(!texts.some((t) => t.includes("developer rules")));
    assert.ok(!texts.some((t) => t.includes("AGENTS.md")));
    assert.ok(texts.some((t) => t.includes("environment_context")));
    assert.ok(texts.some((t) => t.includes("real request")));
    assert.ok(items.some((i) => i.type === "web_search_call"));
    assert.ok(!items.some((i) => i.type === "reasoning"));
  });

  test("heuristic extractor: claims only eligible rollouts and stores memories; no-signal rollouts have no output", async () => {
    await using h = tempHome();
    const now = Date.now();
    const good = writeRollout(h.home, {
      mtimeMs: now - 7 * HOUR,
      cwd: "/w/app",
      commands: ["bun test", "git diff src/app.ts"],
    });
    const chat = writeRollout(h.home, { mtimeMs: now - 8 * HOUR, user: ["hi"], commands: [], final: "hello" });
    writeRollout(h.home, { mtimeMs: now - 1 * HOUR });
    writeRollout(h.home, { mtimeMs: now - 8 * HOUR, source: "exec" });
    writeRollout(h.home, { mtimeMs: now - 20 * DAY });
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(await runPhase1(opts({ state: db, relayHome: h.home, extractor: heuristicExtractor })));
      assert.equal(rep.scanned, 5);
      assert.equal(rep.claimed, 2);
      const by = Object.fromEntries(rep.outcomes.map((o) => [o.threadId, o.status]));
      assert.equal(by[good.id], "succeeded");
      assert.equal(by[chat.id], "succeeded_no_output");
      const out = ok(await getOutput(db, good.id))!;
      assert.match(out.rollout_summary, /bun test/);
      assert.match(out.rollout_summary, /\/w\/app\/src\/app\.ts/);
      assert.match(out.raw_memory, /^---\ndescription: /);
      const again = ok(await runPhase1(opts({ state: db, relayHome: h.home, extractor: heuristicExtractor })));
      assert.equal(again.claimed, 0, "up-to-date rollouts are not claimed again");
    } finally {
      await db.close();
    }
  });

  test("Codex sessions are read with --codex-home", async () => {
    await using h = tempHome();
    const codex = mkdtempSync(path.join(os.tmpdir(), "codex-home-"));
    try {
      const c = writeRollout(codex, { mtimeMs: Date.now() - 9 * HOUR, source: "vscode" });
      const db = await openDb(h.dbFile);
      try {
        const rep = ok(
          await runPhase1(opts({ state: db, relayHome: h.home, codexHome: codex, extractor: heuristicExtractor })),
        );
        assert.deepEqual(
          rep.outcomes.map((o) => [o.threadId, o.status]),
          [[c.id, "succeeded"]],
        );
      } finally {
        await db.close();
      }
    } finally {
      rmSync(codex, { recursive: true, force: true });
    }
  });

  test("model extractor: secrets never reach the prompt, replies are redacted, bad replies fail with backoff", async () => {
    await using h = tempHome();
    const now = Date.now();
    const secret = "sk-abcdefghijklmnopqrstuvwxyz123456";
    const a = writeRollout(h.home, { mtimeMs: now - 7 * HOUR, outputs: [`export OPENAI_API_KEY=${secret}`] });
    const b = writeRollout(h.home, { mtimeMs: now - 8 * HOUR });
    const requests: ModelRequest[] = [];
    const scripted = createScriptedClient({
      script: {
        turns: [
          {
            text: JSON.stringify({
              rollout_summary: `# Fixed parser\nkey ${secret}`,
              rollout_slug: "fixed-parser",
              raw_memory: "---\ndescription: parser\n---\n- run bun test",
            }),
          },
          { text: "this is not json" },
        ],
      },
    });
    const spy: ModelClient = {
      provider: "spy",
      stream(req, signal) {
        requests.push(req);
        return scripted.stream(req, signal);
      },
    };
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(
        await runPhase1(
          opts({
            state: db,
            relayHome: h.home,
            extractor: modelExtractor(spy, "m"),
            concurrency: 1,
            retryDelaySeconds: 3600,
          }),
        ),
      );
      assert.equal(requests.length, 2);
      for (const r of requests) assert.ok(!JSON.stringify(r).includes(secret), "the secret reached the model");
      assert.ok(JSON.stringify(requests[0]).includes("[REDACTED_SECRET]"));
      const by = Object.fromEntries(rep.outcomes.map((o) => [o.threadId, o]));
      assert.equal(by[a.id]!.status, "succeeded");
      assert.equal(by[b.id]!.status, "failed");
      assert.match(by[b.id]!.error ?? "", /not JSON/);
      const stored = ok(await getOutput(db, a.id))!;
      assert.ok(!stored.rollout_summary.includes(secret));
      assert.equal(stored.rollout_slug, "fixed-parser");
      const job = ok(await readStage1Job(db, b.id))!;
      assert.equal(job.status, "error");
      assert.equal(job.retry_remaining, 2);
      assert.ok(job.retry_at! >= Math.floor(now / 1000) + 3600 - 5);
      const again = ok(await runPhase1(opts({ state: db, relayHome: h.home, extractor: heuristicExtractor })));
      assert.equal(again.claimed, 0);
      assert.equal(again.skipped.by_reason.retry_backoff, 1);
    } finally {
      await db.close();
    }
  });

  test("bounded claims and a concurrency cap on extraction", async () => {
    await using h = tempHome();
    const now = Date.now();
    for (let i = 0; i < 12; i++) writeRollout(h.home, { mtimeMs: now - 7 * HOUR - i * 60_000 });
    let inFlight = 0;
    let peak = 0;
    // Extractions wait until three run at once, so reaching the cap does not depend on timing.
    const capReached = deferred();
    const slow: Extractor = async (input, signal) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      if (inFlight === 3) capReached.resolve();
      await until(capReached.promise, "three extractions in flight at once");
      // Not a wait: an extraction takes a while, time in which a pool ignoring the cap would start
      // more; a pool that keeps it passes whatever the length.
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      return heuristicExtractor(input, signal);
    };
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(
        await runPhase1(opts({ state: db, relayHome: h.home, extractor: slow, maxClaims: 10, concurrency: 3 })),
      );
      assert.equal(rep.claimed, 10);
      assert.equal(peak, 3);
      assert.equal(ok(await listOutputs(db)).length, 10);
    } finally {
      await db.close();
    }
  });

  test("hosts sharing one DB claim only the rollouts their own scan saw", async () => {
    await using a = tempHome();
    await using b = tempHome();
    const now = Date.now();
    const ra = writeRollout(a.home, { mtimeMs: now - 7 * HOUR });
    const rb = writeRollout(b.home, { mtimeMs: now - 8 * HOUR });
    const db = await openDb(a.dbFile);
    try {
      const first = ok(
        await runPhase1(opts({ state: db, relayHome: a.home, extractor: heuristicExtractor, host: "host-a" })),
      );
      const second = ok(
        await runPhase1(opts({ state: db, relayHome: b.home, extractor: heuristicExtractor, host: "host-b" })),
      );
      assert.deepEqual(
        first.outcomes.map((o) => [o.threadId, o.status]),
        [[ra.id, "succeeded"]],
      );
      assert.deepEqual(
        second.outcomes.map((o) => [o.threadId, o.status]),
        [[rb.id, "succeeded"]],
      );
      // A's thread is in the shared DB, but host-b never tries to read its file.
      assert.equal(ok(await listOutputs(db)).length, 2);
    } finally {
      await db.close();
    }
  });
});
