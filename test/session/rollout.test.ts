import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { appendFile, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { sessionsDir } from "../../src/home/home.ts";
import { assistantMessage, type ResponseItem, userMessage } from "../../src/model/items.ts";
import { isUuid, uuidv7, uuidv7Time } from "../../src/rollout/ids.ts";
import { readRollout, readSessionMeta } from "../../src/rollout/reader.ts";
import { RolloutWriter, shouldPersistEvent, shouldPersistItem } from "../../src/rollout/writer.ts";
import { must, mustErr, withHome } from "./support.ts";

const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const turnContext = {
  cwd: "/work/project",
  approval_policy: "on-request",
  sandbox_policy: { mode: "workspace-write", writable_roots: ["/work/project"], network: false },
  model: "test-model",
};

const call: ResponseItem = { type: "function_call", name: "exec_command", arguments: '{"cmd":"ls"}', call_id: "c1" };
const output: ResponseItem = { type: "function_call_output", call_id: "c1", output: "a.txt\n" };

async function newWriter(home: string, now?: Date): Promise<RolloutWriter> {
  return must(
    await RolloutWriter.create({
      home,
      meta: { cwd: "/work/project", source: "cli", model_provider: "scripted" },
      ...(now ? { now } : {}),
    }),
  );
}

describe("uuidv7", () => {
  test("well-formed, version 7, variant 10, time-ordered even within one millisecond", () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7(1_700_000_000_000));
    for (const id of ids) {
      assert.ok(isUuid(id), id);
      assert.equal(id[14], "7");
      assert.ok("89ab".includes(id[19]!), id);
    }
    assert.deepEqual([...ids].sort(), ids, "ids sort in creation order");
    assert.equal(new Set(ids).size, ids.length);
    const asked = Date.now() + 1000;
    const later = uuidv7(asked);
    assert.ok(later > ids.at(-1)!);
    // At least the time asked for: ids made earlier in this process (a writer given a later
    // clock, say) may have moved the sequence further, and it never steps back.
    assert.ok(uuidv7Time(later)! >= asked, `${uuidv7Time(later)} >= ${asked}`);
  });
});

describe("rollout files", () => {
  test("write then read round trip: meta, items, turn_context, compacted with replacement_history", async () => {
    await withHome(async (home) => {
      const now = new Date(2025, 0, 2, 3, 4, 5);
      const w = await newWriter(home, now);
      const rel = path.relative(sessionsDir(home), w.path);
      assert.equal(rel, path.join("2025", "01", "02", `rollout-2025-01-02T03-04-05-${w.id}.jsonl`));
      assert.ok(isUuid(w.id));

      must(await w.append([{ type: "turn_context", payload: turnContext }]));
      must(await w.appendItems([userMessage("list files"), call, output, assistantMessage("a.txt")]));
      must(
        await w.appendEvents([
          { type: "agent_message_delta", delta: "a" },
          { type: "agent_message", message: "a.txt" },
        ]),
      );
      const replacement = [userMessage("list files"), assistantMessage("summary: there is a.txt")];
      must(
        await w.append([
          { type: "compacted", payload: { message: "summary: there is a.txt", replacement_history: replacement } },
        ]),
      );
      must(await w.appendItems([userMessage("next")]));
      must(await w.close());

      const r = must(await readRollout(w.path));
      assert.deepEqual(r.warnings, []);
      assert.equal(r.meta.id, w.id);
      assert.equal(r.meta.originator, "relay");
      assert.equal(r.meta.source, "cli");
      assert.equal(r.meta.cwd, "/work/project");
      assert.equal(r.meta.model_provider, "scripted");
      assert.equal(r.meta.timestamp, now.toISOString());
      assert.deepEqual(r.lastTurnContext, turnContext);
      assert.deepEqual(
        r.lines.map((l) => l.type),
        [
          "session_meta",
          "turn_context",
          "response_item",
          "response_item",
          "response_item",
          "response_item",
          "event_msg",
          "compacted",
          "response_item",
        ],
      );
      for (const l of r.lines) assert.match(l.timestamp, ISO_MS_Z);
      assert.deepEqual(r.items, [...replacement, userMessage("next")]);

      const raw = await readFile(w.path, "utf8");
      assert.ok(raw.endsWith("\n"));
      assert.doesNotMatch(raw, /delta/, "deltas are never persisted");
    });
  });

  test("without a compaction the history is every response item in order", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(
        await w.appendItems([
          userMessage("hi"),
          call,
          output,
          { type: "compaction_trigger" },
          assistantMessage("done"),
        ]),
      );
      must(await w.close());
      assert.deepEqual(must(await readRollout(w.path)).items, [
        userMessage("hi"),
        call,
        output,
        assistantMessage("done"),
      ]);
    });
  });

  test("a legacy compacted line without replacement_history becomes one assistant summary message", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.appendItems([userMessage("old"), assistantMessage("old answer")]));
      must(await w.append([{ type: "compacted", payload: { message: "the summary" } }]));
      must(await w.appendItems([userMessage("new")]));
      must(await w.close());
      assert.deepEqual(must(await readRollout(w.path)).items, [assistantMessage("the summary"), userMessage("new")]);
    });
  });

  test("resume appends to the same file", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.appendItems([userMessage("first")]));
      must(await w.close());
      assert.equal(
        mustErr(await w.append([{ type: "response_item", payload: userMessage("late") }])).code,
        "rollout_closed",
      );

      const again = must(await RolloutWriter.resume(w.path));
      assert.equal(again.path, w.path);
      assert.equal(again.id, w.id);
      must(await again.appendItems([userMessage("second")]));
      must(await again.close());

      const files = await readdir(path.dirname(w.path));
      assert.equal(files.length, 1, "no copy was made");
      const r = must(await readRollout(w.path));
      assert.deepEqual(r.items, [userMessage("first"), userMessage("second")]);
      assert.equal(r.lines.filter((l) => l.type === "session_meta").length, 1);
    });
  });

  test("a torn last line is skipped and reported; resuming terminates it first", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.appendItems([userMessage("kept")]));
      must(await w.close());
      const torn = '{"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"mess';
      await appendFile(w.path, torn);

      const r = must(await readRollout(w.path));
      assert.deepEqual(r.items, [userMessage("kept")]);
      assert.deepEqual(r.warnings, [
        `ignored a torn last line (${Buffer.byteLength(torn)} bytes) at the end of ${w.path}: the previous run probably crashed mid-write`,
      ]);

      const again = must(await RolloutWriter.resume(w.path));
      must(await again.appendItems([userMessage("after crash")]));
      must(await again.close());
      const r2 = must(await readRollout(w.path));
      assert.deepEqual(
        r2.items,
        [userMessage("kept"), userMessage("after crash")],
        "the new line is not glued to the torn one",
      );
      assert.deepEqual(r2.warnings, [`skipped line 3 of ${w.path}: not valid JSON`]);
    });
  });

  test("a complete last line without its newline still counts", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.close());
      await appendFile(
        w.path,
        JSON.stringify({
          timestamp: new Date().toISOString(),
          type: "response_item",
          payload: userMessage("no newline"),
        }),
      );
      const r = must(await readRollout(w.path));
      assert.deepEqual(r.warnings, []);
      assert.deepEqual(r.items, [userMessage("no newline")]);
    });
  });

  test("garbled and invalid lines in the middle are skipped with their line numbers; the rest survives", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.appendItems([userMessage("one")]));
      must(await w.close());
      await appendFile(w.path, "}}garbage{{\n");
      await appendFile(w.path, JSON.stringify({ timestamp: "t", type: "turn_context", payload: { cwd: 5 } }) + "\n");
      await appendFile(w.path, "\n");
      const again = must(await RolloutWriter.resume(w.path));
      must(await again.appendItems([userMessage("two")]));
      must(await again.close());

      const r = must(await readRollout(w.path));
      assert.deepEqual(r.items, [userMessage("one"), userMessage("two")]);
      assert.equal(r.warnings.length, 2);
      assert.equal(r.warnings[0], `skipped line 3 of ${w.path}: not valid JSON`);
      assert.match(
        r.warnings[1]!,
        /^skipped line 4 of .*: invalid turn_context line \(payload\.cwd: .*; payload\.approval_policy is missing; payload\.sandbox_policy is missing; 1 more\)$/,
      );
      assert.equal(r.lastTurnContext, undefined);
    });
  });

  test("unknown line types are kept in lines and ignored for history", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      must(await w.close());
      await appendFile(
        w.path,
        JSON.stringify({ timestamp: "2025-01-01T00:00:00.000Z", type: "world_state", payload: { x: 1 } }) + "\n",
      );
      const r = must(await readRollout(w.path));
      assert.deepEqual(r.warnings, []);
      assert.deepEqual(r.lines[1], { timestamp: "2025-01-01T00:00:00.000Z", type: "world_state", payload: { x: 1 } });
      assert.deepEqual(r.items, []);
    });
  });

  test("empty files, files without session_meta first and missing files are clear errors", async () => {
    await withHome(async (home) => {
      const empty = path.join(home, "empty.jsonl");
      await writeFile(empty, "");
      const e1 = mustErr(await readRollout(empty));
      assert.equal(e1.code, "rollout_empty");
      assert.match(e1.message, /empty\.jsonl is empty/);

      const noMeta = path.join(home, "nometa.jsonl");
      await writeFile(
        noMeta,
        JSON.stringify({ timestamp: "t", type: "response_item", payload: userMessage("x") }) + "\n",
      );
      const e2 = mustErr(await readRollout(noMeta));
      assert.equal(e2.code, "rollout_invalid");
      assert.match(e2.message, /must start with a session_meta line, but its first line is a response_item line/);

      const onlyTorn = path.join(home, "torn.jsonl");
      await writeFile(onlyTorn, '{"timestamp":"t","type":"sess');
      assert.match(mustErr(await readRollout(onlyTorn)).message, /only a torn line/);

      const missing = path.join(home, "missing.jsonl");
      assert.equal(mustErr(await readRollout(missing)).code, "rollout_not_found");
      assert.equal(mustErr(await RolloutWriter.resume(missing)).code, "rollout_not_found");
      assert.equal(mustErr(await readSessionMeta(noMeta)).code, "rollout_invalid");
    });
  });

  test("a batch is in the file as append returns, unless a flush is under way; then right after it", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      const lines = () => readFileSync(w.path, "utf8").split("\n").filter(Boolean).length;
      const before = lines();
      const first = w.append([{ type: "response_item", payload: userMessage("now") }]);
      assert.equal(lines(), before + 1, "written before the promise is awaited");
      const flushing = w.flush();
      const queued = w.append([{ type: "response_item", payload: userMessage("after the flush") }]);
      must(await first);
      must(await flushing);
      must(await queued);
      assert.equal(lines(), before + 2);
      must(await w.close());
      const texts = must(await readRollout(w.path)).items.map(
        (it) => (it as { content: { text: string }[] }).content[0]!.text,
      );
      assert.deepEqual(texts.slice(-2), ["now", "after the flush"]);
    });
  });

  test("concurrent appends from many callers never interleave", async () => {
    await withHome(async (home) => {
      const w = await newWriter(home);
      const big = "x".repeat(100_000);
      const callers = Array.from({ length: 40 }, async (_, c) => {
        for (let i = 0; i < 10; i++) {
          const batch = Array.from({ length: 1 + (i % 3) }, (_, k) => ({
            type: "response_item" as const,
            payload: userMessage(`${c}:${i}:${k}:${k === 0 && i % 4 === 0 ? big : ""}`),
          }));
          must(await w.append(batch));
          if (i % 5 === 0) must(await w.flush());
        }
      });
      await Promise.all(callers);
      must(await w.close());

      const text = await readFile(w.path, "utf8");
      const lines = text.split("\n");
      assert.equal(lines.pop(), "");
      for (const l of lines) JSON.parse(l);
      const r = must(await readRollout(w.path));
      assert.deepEqual(r.warnings, []);
      const seen = r.items.map((it) =>
        (it as { content: { text: string }[] }).content[0]!.text.split(":").slice(0, 3).join(":"),
      );
      assert.equal(seen.length, 40 * (4 * 1 + 3 * 2 + 3 * 3));
      // Each batch stays contiguous and each caller's batches stay in order.
      for (let c = 0; c < 40; c++) {
        const mine = seen.filter((s) => s.startsWith(`${c}:`));
        const expected = Array.from({ length: 10 }, (_, i) =>
          Array.from({ length: 1 + (i % 3) }, (_, k) => `${c}:${i}:${k}`),
        ).flat();
        assert.deepEqual(mine, expected);
        for (let i = 0; i < 10; i++) {
          const at = seen.indexOf(`${c}:${i}:0`);
          for (let k = 1; k < 1 + (i % 3); k++) assert.equal(seen[at + k], `${c}:${i}:${k}`);
        }
      }
    });
  });
});

describe("persistence policy", () => {
  test("history-bearing events are kept; deltas, begins and requests are not", () => {
    for (const t of [
      "user_message",
      "agent_message",
      "agent_reasoning",
      "token_count",
      "context_compacted",
      "turn_aborted",
      "task_started",
      "turn_started",
      "task_complete",
      "turn_complete",
      "patch_apply_end",
    ]) {
      assert.equal(shouldPersistEvent(t), true, t);
    }
    for (const t of [
      "agent_message_delta",
      "agent_reasoning_delta",
      "exec_command_begin",
      "exec_command_output_delta",
      "exec_approval_request",
      "session_configured",
      "error",
      "something_new",
    ]) {
      assert.equal(shouldPersistEvent(t), false, t);
    }
    assert.equal(shouldPersistEvent("exec_command_end"), false);
    assert.equal(shouldPersistEvent("exec_command_end", "extended"), true);
    assert.equal(shouldPersistEvent("agent_message_delta", "extended"), false);
    assert.equal(shouldPersistItem({ type: "message" }), true);
    assert.equal(shouldPersistItem({ type: "compaction_trigger" }), false);
  });
});
