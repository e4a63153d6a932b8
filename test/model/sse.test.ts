import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { jsonPayloads, parseSse, SseDecoder, type SseEvent } from "../../src/model/sse.ts";

const enc = new TextEncoder();

function streamOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(typeof ch === "string" ? enc.encode(ch) : ch);
      c.close();
    },
  });
}

async function all(chunks: (string | Uint8Array)[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of parseSse(streamOf(chunks))) out.push(ev);
  return out;
}

/** Every way to cut `text` into two chunks gives the same events. */
async function everySplit(text: string): Promise<SseEvent[]> {
  const bytes = enc.encode(text);
  const whole = await all([bytes]);
  for (let i = 1; i < bytes.length; i++) {
    assert.deepEqual(await all([bytes.subarray(0, i), bytes.subarray(i)]), whole, `split at byte ${i}`);
  }
  return whole;
}

describe("SSE parser", () => {
  test("named events, multi-line data, comments and ids", async () => {
    const events = await all([
      ": keep-alive\n",
      'event: response.created\nid: 7\ndata: {"a":1}\n\n',
      "data: line one\ndata: line two\n\n",
    ]);
    assert.deepEqual(events, [
      { event: "response.created", data: '{"a":1}', id: "7" },
      { data: "line one\nline two", id: "7" },
    ]);
  });

  test("LF, CRLF and CR line endings give the same events", async () => {
    const lf = "event: x\ndata: 1\n\ndata: 2\n\n";
    const expected = [{ event: "x", data: "1" }, { data: "2" }];
    assert.deepEqual(await all([lf]), expected);
    assert.deepEqual(await all([lf.replaceAll("\n", "\r\n")]), expected);
    assert.deepEqual(await all([lf.replaceAll("\n", "\r")]), expected);
  });

  test("an event split at every byte position (CRLF pair and UTF-8 included) parses the same", async () => {
    const text = 'event: delta\r\ndata: {"t":"héllo ✓ 😀"}\r\n\r\ndata: [DONE]\r\n\r\n';
    const events = await everySplit(text);
    assert.deepEqual(events, [{ event: "delta", data: '{"t":"héllo ✓ 😀"}' }, { data: "[DONE]" }]);
  });

  test("one byte per chunk", async () => {
    const bytes = enc.encode("data: ünïcödé\r\n\r\ndata: b\n\n");
    const chunks = Array.from(bytes, (b) => new Uint8Array([b]));
    assert.deepEqual(await all(chunks), [{ data: "ünïcödé" }, { data: "b" }]);
  });

  test("a CR at the end of one chunk and LF at the start of the next is one line end", () => {
    const d = new SseDecoder();
    assert.deepEqual(d.push("data: a\r"), []);
    assert.deepEqual(d.push("\n"), []);
    assert.deepEqual(d.push("\r"), [{ data: "a" }]);
    assert.deepEqual(d.push("\ndata: b\r\r"), [{ data: "b" }]);
  });

  test("the final event needs no trailing blank line, nor a final newline", async () => {
    assert.deepEqual(await all(["data: first\n\n", "data: last\n"]), [{ data: "first" }, { data: "last" }]);
    assert.deepEqual(await all(["event: e\ndata: x"]), [{ event: "e", data: "x" }]);
  });

  test("space after the colon is optional and only one is removed; events without data are dropped", async () => {
    assert.deepEqual(await all(["data:a\n\ndata:  b\n\nevent: nothing\n\ndata\n\n"]), [
      { data: "a" },
      { data: " b" },
      { data: "" },
    ]);
  });

  test("an async iterable of chunks works too", async () => {
    async function* gen() {
      yield enc.encode("data: 1\n");
      yield enc.encode("\n");
    }
    const out: SseEvent[] = [];
    for await (const ev of parseSse(gen())) out.push(ev);
    assert.deepEqual(out, [{ data: "1" }]);
  });

  test("stopping early cancels the byte stream", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(enc.encode("data: x\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const ev of parseSse(body)) {
      assert.equal(ev.data, "x");
      break;
    }
    assert.equal(cancelled, true);
  });

  test("jsonPayloads splits events that a server framed with single newlines", () => {
    assert.deepEqual(jsonPayloads('{"a":1}'), [{ a: 1 }]);
    assert.deepEqual(jsonPayloads('{"a":1}\n{"b":2}\n[DONE]'), [{ a: 1 }, { b: 2 }, "[DONE]"]);
    assert.throws(() => jsonPayloads("not json"), /not JSON/);
  });
});
