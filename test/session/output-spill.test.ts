import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import type { SessionEvent } from "../../src/contracts/events.ts";
import { fullOutputNote, outputsDir } from "../../src/session/output-spill.ts";
import { reply } from "../support/fake-model-server.ts";
import { harness, inputOf } from "./run-support.ts";

const outputOf = (body: unknown, callId: string): string =>
  String(inputOf(body).find((i) => i.type === "function_call_output" && i.call_id === callId)?.output);

describe("big outputs are kept, not lost", () => {
  test("a cut exec output is saved whole next to the rollout, and the model reads the cut lines from it", async () => {
    await using h = await harness();
    const lines = 300_000; // about 2 MB: past the executor's 1 MiB buffer as well as the model's 10k tokens
    h.server.enqueue(reply().toolCall("exec_command", { cmd: `seq 1 ${lines}` }, { callId: "call_big" }));
    let cutFrom = 0;
    const r = await h.run({
      prompt: "count",
      emit: (e: SessionEvent) => {
        h.events.push(e);
        if (e.type !== "tool_result" || e.call_id !== "call_big") return;
        // The model's next step, decided from what it read: read_file where the note says.
        const m = /read_file \{"file_path": ("[^"]+"), "offset": (\d+), "limit": (\d+)\}/.exec(e.output);
        assert.ok(m, e.output.slice(0, 600));
        cutFrom = Number(m[2]);
        h.server.enqueue(
          reply().toolCall(
            "read_file",
            { file_path: JSON.parse(m[1]!), offset: cutFrom, limit: 2 },
            { callId: "call_read" },
          ),
          reply().text("done"),
        );
      },
    });
    assert.ok("ok" in r, JSON.stringify(r));

    const file = path.join(outputsDir(r.ok.rolloutPath), "call_big.txt");
    assert.equal(path.dirname(file), r.ok.rolloutPath.replace(/\.jsonl$/, ".outputs"));
    const result = h.events.find(
      (e): e is Extract<SessionEvent, { type: "tool_result" }> => e.type === "tool_result" && e.call_id === "call_big",
    )!;
    assert.equal(result.full_output_path, file, "the event names the file for the user");
    assert.ok(
      readFileSync(file, "utf8") === Array.from({ length: lines }, (_, i) => `${i + 1}\n`).join(""),
      "the file holds the whole output",
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);

    const seen = outputOf(h.server.requests[1]!.body, "call_big");
    assert.match(
      seen,
      new RegExp(
        `^Full output \\(${lines} lines, [\\d.]+ MiB\\) saved to ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\. The output below leaves out lines ${cutFrom}-\\d+;`,
        "m",
      ),
    );
    assert.match(seen, /…\d+ tokens truncated…/, "what the model read is cut");
    assert.ok(seen.length < 50_000, `the model read ${seen.length} characters`);
    assert.equal(
      outputOf(h.server.requests[2]!.body, "call_read").split("\n")[0],
      `L${cutFrom}: ${cutFrom}`,
      "read_file at the named offset gives the first line the model did not see",
    );
  });

  test("the note says when the file is not on the executor's host, and when bytes are missing from it too", () => {
    const info = {
      id: "x",
      bytes: 10,
      dropped_bytes: 4096,
      limit_bytes: 64 * 1024 * 1024,
      cut_lines: { from: 5, to: 90 },
    };
    const note = fullOutputNote(
      { path: "/h/sessions/x.outputs/c.txt", bytes: 70 * 1024 * 1024, lines: 100 },
      info,
      false,
    );
    assert.match(
      note,
      /^Full output \(100 lines, 70 MiB\) saved on the host relay runs on, not on this executor, so your tools cannot open it: \/h\/sessions\/x\.outputs\/c\.txt\./,
    );
    assert.match(note, /leaves out lines 5-90/);
    assert.match(
      note,
      /the executor keeps at most 64 MiB of output, so 4096 bytes are missing where a marker line says so/,
    );
    assert.doesNotMatch(note, /read_file/);
  });
});
