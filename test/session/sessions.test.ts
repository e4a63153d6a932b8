/** The pieces under `relay sessions` and the resume picker: turn counting, summaries, transcripts, forks, picks. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, test } from "node:test";
import { parsePick } from "../../src/cli/session-picker.ts";
import { assistantMessage, type ResponseItem, userMessage } from "../../src/model/items.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { forkRollout } from "../../src/rollout/fork.ts";
import { readRollout } from "../../src/rollout/reader.ts";
import { countLinesOfType, readLineAt, SCAN_CHUNK } from "../../src/rollout/scan.ts";
import { listSessions, summarizeRollout } from "../../src/rollout/summary.ts";
import { readTranscript } from "../../src/rollout/transcript.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { must, withHome } from "./support.ts";

const turnContext = (model: string) => ({
  type: "turn_context" as const,
  payload: { cwd: "/w", approval_policy: "never", sandbox_policy: "read-only", model },
});

/** A rollout with one turn per prompt: turn_context, the prompt (item and event), an answer. */
async function session(
  home: string,
  prompts: string[],
  o: { context?: ResponseItem; now?: Date; model?: (i: number) => string } = {},
): Promise<RolloutWriter> {
  const w = must(await RolloutWriter.create({ home, meta: { cwd: "/w", source: "cli" }, now: o.now }));
  if (o.context) must(await w.appendItems([o.context]));
  for (const [i, p] of prompts.entries()) {
    must(await w.append([turnContext(o.model?.(i) ?? "m1")]));
    must(await w.appendItems([userMessage(p)]));
    must(await w.appendEvents([{ type: "user_message", message: p }]));
    must(await w.appendItems([assistantMessage(`answer ${i}`)]));
  }
  must(await w.close());
  return w;
}

describe("counting turn_context lines without parsing", () => {
  test("a marker across a chunk edge counts once; escaped markers in strings do not count; the last one's line is found", async () => {
    await withHome(async (dir) => {
      const marker = '"type":"turn_context"';
      const tc = (model: string) => `{"timestamp":"t",${marker},"payload":{"model":"${model}"}}`;
      const inString = `{"timestamp":"t","type":"response_item","payload":{"text":${JSON.stringify(marker)}}}`;
      // The second line's marker starts `k` bytes before the first chunk's end: across it for 0 < k < 21.
      for (const k of [0, 1, 2, 10, 20, 21, 22]) {
        const first = `{"timestamp":"t","type":"response_item","payload":"`;
        const lineLength = SCAN_CHUNK - k - '{"timestamp":"t",'.length;
        const pad = "x".repeat(lineLength - first.length - 3);
        const file = path.join(dir, `r${k}.jsonl`);
        await writeFile(file, `${first}${pad}"}\n${tc("m1")}\n${inString}\n${tc("m2")}\n${inString}\n`);
        const r = await countLinesOfType(file, "turn_context", 1 << 30);
        assert.equal(r.count, 2, `k=${k}`);
        assert.equal(r.complete, true);
        assert.equal(await readLineAt(file, r.lastLineAt!, 1 << 20), tc("m2"), `k=${k}`);
      }
    });
  });

  test("past the byte bound the count is a lower bound", async () => {
    await withHome(async (dir) => {
      const file = path.join(dir, "big.jsonl");
      const line = `{"timestamp":"t","type":"turn_context","payload":{"pad":"${"x".repeat(1000)}"}}\n`;
      await writeFile(file, line.repeat(1000));
      assert.deepEqual(await countLinesOfType(file, "turn_context", 1 << 30).then((r) => [r.count, r.complete]), [
        1000,
        true,
      ]);
      const bounded = await countLinesOfType(file, "turn_context", 300 * 1024);
      assert.equal(bounded.complete, false);
      assert.ok(bounded.count > 250 && bounded.count < 1000, `a lower bound: ${bounded.count}`);
    });
  });
});

describe("session summaries", () => {
  test("prompt from the user_message event (not the context message before it), turns, the last model", async () => {
    await withHome(async (home) => {
      const w = await session(home, ["fix   the\nparser", "and now the lexer"], {
        context: userMessage("<environment_context>cwd=/w</environment_context>"),
        model: (i) => `model-${i}`,
      });
      const [f] = await listRollouts(home);
      const s = await summarizeRollout(f!);
      assert.equal(s.id, w.id);
      assert.equal(s.first_prompt, "fix the parser");
      assert.equal(s.turns, 2);
      assert.equal(s.turns_complete, true);
      assert.equal(s.model, "model-1", "the last turn's model");
      assert.equal(s.cwd, "/w");
      assert.equal(s.error, null);
    });
  });

  test("a long prompt is cut on one line; a session without turns has no model; limits say how many more", async () => {
    await withHome(async (home) => {
      await session(home, [], { now: new Date(2025, 0, 1) });
      await session(home, ["word ".repeat(100)], { now: new Date(2025, 0, 2) });
      const list = await listSessions(home, { limit: 1 });
      assert.equal(list.total, 2);
      assert.equal(list.more, 1);
      assert.equal(list.sessions[0]!.first_prompt!.length, 200);
      assert.ok(list.sessions[0]!.first_prompt!.endsWith("…"));
      const [, empty] = (await listSessions(home)).sessions;
      assert.equal(empty!.turns, 0);
      assert.equal(empty!.model, null);
      assert.equal(empty!.first_prompt, null);
    });
  });
});

describe("transcripts", () => {
  test("past maxEntries the middle is left out, with the count; the start and the end stay", async () => {
    await withHome(async (home) => {
      const w = await session(
        home,
        Array.from({ length: 30 }, (_, i) => `prompt ${i}`),
      );
      const t = must(await readTranscript(w.path, { maxEntries: 20 }));
      assert.equal(t.entries.length, 20);
      assert.equal(t.omitted, 30 * 3 - 20);
      assert.equal(t.omitted_at, 5);
      assert.deepEqual(t.entries[1], { kind: "user", at: t.entries[1]!.at, text: "prompt 0" });
      assert.deepEqual(t.entries.at(-1), { kind: "assistant", at: t.entries.at(-1)!.at, text: "answer 29" });
    });
  });
});

describe("forking a rollout", () => {
  test("the fork has its own id and meta naming the source, then the source's lines", async () => {
    await withHome(async (home) => {
      const src = await session(home, ["first"]);
      const source = must(await readRollout(src.path));
      const fork = must(
        await forkRollout({
          home,
          source: { id: source.meta.id, path: src.path, lines: source.lines, lineCount: source.lineCount },
          meta: { cwd: "/w", source: "cli" },
        }),
      );
      must(await fork.close());
      const copy = must(await readRollout(fork.path));
      assert.notEqual(copy.meta.id, source.meta.id);
      assert.equal(copy.meta.forked_from_id, source.meta.id);
      assert.equal(copy.meta.forked_from_path, src.path);
      assert.equal(
        copy.meta.forked_from_lines,
        readFileSync(src.path, "utf8").trim().split("\n").length,
        "the source's line count",
      );
      assert.deepEqual(copy.items, source.items);
      assert.deepEqual(copy.lines.slice(1), source.lines.slice(1), "same lines, same timestamps, one session_meta");
      assert.equal(copy.lines.filter((l) => l.type === "session_meta").length, 1);
    });
  });
});

describe("the resume picker's answers", () => {
  test("Enter is the newest, a number in range picks, q cancels, anything else asks again", () => {
    assert.deepEqual(parsePick("", 5), { index: 0 });
    assert.deepEqual(parsePick(" 3 \n", 5), { index: 2 });
    assert.deepEqual(parsePick("5", 5), { index: 4 });
    assert.deepEqual(parsePick("Q", 5), { cancel: true });
    for (const bad of ["0", "6", "-1", "1.5", "two", "1e0"]) assert.ok("again" in parsePick(bad, 5), bad);
    assert.match((parsePick("9", 5) as { again: string }).again, /from 1 to 5/);
  });
});
