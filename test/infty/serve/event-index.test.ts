/** The line-offset index of events.jsonl: built once, then only appended bytes are read; pages are read by offset. */
import assert from "node:assert/strict";
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { EventLogIndex } from "../../../src/infty/serve/event-index.ts";

const line = (i: number) => JSON.stringify({ at: "2026-01-01T00:00:00.000Z", type: "warning", message: `event ${i}` });

describe("events.jsonl index", () => {
  test("100 000 lines: any page by offset; later refreshes read only what was appended; a shrunk file is indexed again", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-index-"));
    try {
      const file = path.join(dir, "events.jsonl");
      writeFileSync(file, Array.from({ length: 100_000 }, (_, i) => line(i)).join("\n") + "\n");
      const index = new EventLogIndex(file);
      const grew: number[] = [];
      index.onGrow((n) => grew.push(n));
      assert.equal(await index.refresh(), 100_000);
      assert.deepEqual(await index.read(99_998, 10), [line(99_998), line(99_999)]);
      assert.deepEqual(await index.read(50_000, 2), [line(50_000), line(50_001)]);
      appendFileSync(file, `${line(100_000)}\n{"type":"torn`);
      assert.equal(await index.refresh(), 100_001, "a line without its newline is not counted yet");
      // Newlines written over old bytes in place: an index that read the file again would count them.
      const fd = openSync(file, "r+");
      writeSync(fd, "\n\n\n", 10);
      closeSync(fd);
      appendFileSync(file, "\n");
      assert.equal(await index.refresh(), 100_002, "only the appended bytes were read");
      assert.deepEqual(await index.read(100_001, 5), ['{"type":"torn']);
      assert.deepEqual(grew, [100_000, 100_001, 100_002]);
      writeFileSync(file, `${line(0)}\n`);
      assert.equal(await index.refresh(), 1, "a file that shrank is indexed from the start");
      assert.deepEqual(await index.read(0, 5), [line(0)]);
      writeFileSync(`${file}.new`, Array.from({ length: 3 }, (_, i) => line(i + 7)).join("\n") + "\n");
      renameSync(`${file}.new`, file);
      assert.equal(await index.refresh(), 3, "another file in its place is indexed from the start");
      assert.deepEqual(await index.read(0, 1), [line(7)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
