import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { FullOutputStore, OutputSpool, spooledPieces } from "../../src/executor/full-output.ts";
import { HeadTailBuffer } from "../../src/executor/head-tail-buffer.ts";

/** Pushes `chunks` the way the process manager does: the spool sees each chunk before the buffer. */
function feed(spool: OutputSpool, buffer: HeadTailBuffer, chunks: string[]): void {
  for (const c of chunks) {
    spool.push(Buffer.from(c), buffer);
    buffer.push(Buffer.from(c));
  }
}

function readAll(store: FullOutputStore, id: string, pieceBytes: number): string {
  const parts: Buffer[] = [];
  for (let offset = 0; ; ) {
    const r = store.read(id, offset, pieceBytes);
    assert.ok("ok" in r, JSON.stringify(r));
    parts.push(Buffer.from(r.ok.data_base64, "base64"));
    if (r.ok.done) return Buffer.concat(parts).toString("utf8");
    offset = r.ok.next_offset;
  }
}

describe("full output (keep_full_output)", () => {
  test("output the buffer can hold starts no spool", () => {
    const store = new FullOutputStore(100);
    const spool = new OutputSpool(store);
    const buffer = new HeadTailBuffer(10);
    feed(spool, buffer, ["0123", "456789"]);
    assert.equal(spool.take(), undefined);
  });

  test("the chunk that would make the buffer drop starts the spool with everything so far", () => {
    const store = new FullOutputStore(100);
    const spool = new OutputSpool(store);
    const buffer = new HeadTailBuffer(10);
    feed(spool, buffer, ["0123", "456789", "abc", "def"]);
    assert.ok(buffer.omittedBytes > 0, "the buffer did drop");
    const taken = spool.take()!;
    assert.equal(taken.bytes.toString(), "0123456789abcdef");
    assert.equal(taken.dropped, 0);
    assert.equal(spool.take(), undefined, "taking empties it: the next poll starts a new segment");
    assert.equal(store.reserve(100), 100, "and gives its bytes back to the budget");
  });

  test("past the budget the spool keeps a prefix and counts the rest; the buffer's tail supplies the end", () => {
    const store = new FullOutputStore(12);
    const spool = new OutputSpool(store);
    const buffer = new HeadTailBuffer(10);
    feed(spool, buffer, ["0123456789", "abcdef", "ghij", "klmnopqrst"]);
    const taken = spool.take()!;
    assert.equal(taken.bytes.toString(), "0123456789ab");
    assert.equal(taken.dropped, 18, "every byte after the first drop counts, even if the budget had room again");
    const drained = buffer.drain();
    const pieces = spooledPieces(new Uint8Array(0), taken, drained.bytes.subarray(drained.headBytes), 0);
    assert.equal(Buffer.from(pieces.head).toString(), "0123456789ab");
    assert.equal(Buffer.from(pieces.tail).toString(), "pqrst");
    assert.equal(pieces.gapBytes, 13);
  });

  test("bytes held back from the last poll come first; an incomplete character at the end is left for the next", () => {
    const pieces = spooledPieces(
      Buffer.from("xy"),
      { bytes: Buffer.from([0x61, 0x62, 0x63, 0xe2]), dropped: 0 },
      new Uint8Array(0),
      1,
    );
    assert.equal(Buffer.from(pieces.head).toString("latin1"), "xyabc");
    assert.equal(pieces.gapBytes, 0);
  });

  test("a held text is read in pieces, whatever its bytes, and let go at its end", () => {
    const store = new FullOutputStore(1000);
    const text = "é\u0000\x1bline\n".repeat(20);
    const { id, bytes } = store.hold(text);
    assert.equal(bytes, Buffer.byteLength(text));
    assert.equal(readAll(store, id, 7), text, "pieces that split characters still join up exactly");
    const again = store.read(id, 0, 10);
    assert.ok("error" in again && /no full output .* is held here/.test(again.error.message));
  });

  test("only the newest few texts are held", () => {
    const store = new FullOutputStore(1000, 2);
    const first = store.hold("one");
    store.hold("two");
    store.hold("three");
    assert.ok("error" in store.read(first.id, 0, 10), "the oldest was let go");
  });
});
