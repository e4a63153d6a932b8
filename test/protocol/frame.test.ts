import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { describe, test } from "node:test";
import { encodeFrame, FrameDecoder, MAX_NESTING } from "../../src/protocol/frame.ts";

function frame(value: unknown, limit?: number): Buffer {
  const r = encodeFrame(value, limit);
  assert.ok("ok" in r, JSON.stringify(r));
  return r.ok;
}

function rawFrame(payload: string | Buffer): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length, 0);
  return Buffer.concat([header, body]);
}

describe("frame codec", () => {
  test("round trips values, with a big-endian length header", () => {
    const value = { type: "request", id: 7, method: "echo", params: { text: "héllo ✓", n: [1, 2, 3] } };
    const buf = frame(value);
    assert.equal(buf.readUInt32BE(0), buf.length - 4);
    const out = new FrameDecoder().push(buf);
    assert.deepEqual(out, [{ kind: "frame", value, text: JSON.stringify(value), bytes: buf.length - 4 }]);
  });

  test("a frame split into single bytes decodes once, with no frame before the last byte", () => {
    const value = { s: "multi-byte 😀 utf-8 split across reads" };
    const buf = frame(value);
    const dec = new FrameDecoder();
    for (let i = 0; i < buf.length - 1; i++) assert.deepEqual(dec.push(buf.subarray(i, i + 1)), []);
    assert.deepEqual(dec.push(buf.subarray(buf.length - 1)), [
      { kind: "frame", value, text: JSON.stringify(value), bytes: buf.length - 4 },
    ]);
    assert.equal(dec.pendingBytes, 0);
  });

  test("coalesced frames in one read all come out in order", () => {
    const values = Array.from({ length: 50 }, (_, i) => ({ i }));
    const dec = new FrameDecoder();
    const all = Buffer.concat(values.map((v) => frame(v)));
    // plus half of another frame, which must wait
    const extra = frame({ tail: true });
    const out = dec.push(Buffer.concat([all, extra.subarray(0, 6)]));
    assert.deepEqual(
      out.map((f) => (f.kind === "frame" ? f.value : f)),
      values,
    );
    assert.equal(dec.pendingBytes, 6);
    assert.deepEqual(
      dec.push(extra.subarray(6)).map((f) => (f.kind === "frame" ? f.value : f)),
      [{ tail: true }],
    );
  });

  test("a payload exactly at the limit passes; one byte over is refused before anything is written", () => {
    const limit = 64;
    const exact = JSON.stringify({ s: "" }).length; // 8 bytes of wrapper
    const atLimit = { s: "x".repeat(limit - exact) };
    const buf = frame(atLimit, limit);
    assert.equal(buf.length, 4 + limit);
    assert.deepEqual(new FrameDecoder(limit).push(buf)[0], {
      kind: "frame",
      value: atLimit,
      text: JSON.stringify(atLimit),
      bytes: limit,
    });
    const over = encodeFrame({ s: "x".repeat(limit - exact + 1) }, limit);
    assert.ok("error" in over);
    assert.equal(over.error.code, "frame_too_large");
    assert.match(over.error.message, /65 bytes exceeds the 64-byte limit; nothing was sent/);
  });

  test("an over-limit header is fatal and the decoder keeps no half state", () => {
    const dec = new FrameDecoder(64);
    const big = rawFrame("x".repeat(65));
    const out = dec.push(big);
    assert.equal(out.length, 1);
    assert.equal(out[0]!.kind, "fatal");
    assert.equal(dec.pendingBytes, 0);
    assert.deepEqual(dec.push(frame({ after: 1 })), [], "a failed stream yields nothing more");
    assert.equal(dec.finish(), undefined);
  });

  test("garbage text on the stream is diagnosed as someone printing to stdout", () => {
    const out = new FrameDecoder().push(Buffer.from("hello world\n"));
    assert.equal(out.length, 1);
    const f = out[0]!;
    assert.ok(f.kind === "fatal");
    assert.match(f.message, /announces \d+ bytes, over the 16777216-byte limit/);
    assert.match(f.message, /"hell".*printed to stdout/);
  });

  test("a well-delimited frame with bad JSON is skipped and the stream stays in sync", () => {
    const dec = new FrameDecoder();
    const out = dec.push(Buffer.concat([rawFrame("{not json"), rawFrame(Buffer.from([0xff, 0xfe])), frame({ ok: 1 })]));
    assert.equal(out.length, 3);
    assert.equal(out[0]!.kind, "invalid_json");
    assert.equal(out[1]!.kind, "invalid_json");
    assert.deepEqual(out[2], { kind: "frame", value: { ok: 1 }, text: '{"ok":1}', bytes: 8 });
  });

  test("a stream that ends inside a header or a payload reports a truncated frame", () => {
    const inHeader = new FrameDecoder();
    inHeader.push(Buffer.from([0, 0]));
    assert.match((inHeader.finish() as { message: string }).message, /inside a frame header \(2 of 4 bytes\)/);
    const inBody = new FrameDecoder();
    inBody.push(frame({ long: "abcdefgh" }).subarray(0, 10));
    assert.match((inBody.finish() as { message: string }).message, /inside a frame \(6 of 19 payload bytes\)/);
    const clean = new FrameDecoder();
    clean.push(frame({}));
    assert.equal(clean.finish(), undefined, "EOF at a frame boundary is a clean end");
  });

  test("a zero-length frame that ends a read is an empty payload, not a crash, and the stream stays in sync", () => {
    const dec = new FrameDecoder();
    const empty = dec.push(Buffer.alloc(4));
    assert.equal(empty.length, 1);
    assert.equal(empty[0]!.kind, "invalid_json");
    assert.match((empty[0] as { message: string }).message, /the frame payload is empty/);
    // and inside a read, between two frames
    const out = dec.push(Buffer.concat([frame({ a: 1 }), Buffer.alloc(4), frame({ b: 2 })]));
    assert.deepEqual(
      out.map((f) => f.kind),
      ["frame", "invalid_json", "frame"],
    );
    assert.equal(dec.pendingBytes, 0);
    assert.equal(dec.finish(), undefined);
  });

  test("nesting up to MAX_NESTING decodes; deeper is an unreadable payload, brackets inside strings do not count", () => {
    const nest = (n: number) => "[".repeat(n) + "]".repeat(n);
    const dec = new FrameDecoder();
    const [within, beyond, inString] = dec.push(
      Buffer.concat([
        rawFrame(nest(MAX_NESTING)),
        rawFrame(nest(MAX_NESTING + 1)),
        rawFrame(JSON.stringify({ s: "[".repeat(5000) })),
      ]),
    );
    assert.equal(within!.kind, "frame");
    assert.equal(beyond!.kind, "invalid_json");
    assert.match((beyond as { message: string }).message, /nests arrays and objects deeper than 1000 levels/);
    assert.equal(inString!.kind, "frame");
    const deep = dec.push(rawFrame(nest(100_000)));
    assert.equal(deep[0]!.kind, "invalid_json");
  });

  test("bigints are written as exact number tokens; nothing else in the message changes", () => {
    const tagLike = "\u0000u64:abc:1";
    const buf = frame({ type: "response", id: 18446744073709551615n, result: { ok: { n: [1n, -2n], s: tagLike } } });
    const text = buf.subarray(4).toString("utf8");
    assert.equal(
      text,
      `{"type":"response","id":18446744073709551615,"result":{"ok":{"n":[1,-2],"s":${JSON.stringify(tagLike)}}}}`,
    );
    assert.equal(buf.readUInt32BE(0), Buffer.byteLength(text));
  });

  test("non-serialisable values are refused as values", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const r = encodeFrame(cyclic);
    assert.ok("error" in r);
    assert.equal(r.error.code, "invalid_message");
  });
});
