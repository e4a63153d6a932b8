/**
 * RpcPeer against bad input, in process: the test writes raw bytes to one peer and reads its
 * raw answers. Requests with synchronous handlers are answered in the order they arrive, so a
 * good request sent last is a barrier: once it is answered, an earlier frame either has its
 * answer too or never will.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { z } from "zod";
import type { RequestId } from "../../src/contracts/envelope.ts";
import { defineMethod } from "../../src/contracts/method.ts";
import { RpcPeer } from "../../src/protocol/peer.ts";
import { err, ok } from "../../src/util/result.ts";
import { header, type RawMessage, RawReader, rawFrame, requestFrame } from "../support/raw-frames.ts";
import { Inbox } from "../support/wait.ts";

const Add = defineMethod("add", z.object({ a: z.number(), b: z.number() }), z.object({ sum: z.number() }), []);
const Fail = defineMethod("fail", z.object({ bytes: z.number() }), z.null(), ["tool_failed"]);
const Cyclic = defineMethod("cyclic", z.object({}), z.unknown(), []);
const NotAResult = defineMethod("not_a_result", z.object({}), z.unknown(), []);
const Hold = defineMethod("hold", z.object({}), z.object({ released: z.boolean() }), []);

/** A peer with handlers on one side; the test is the other side, in raw bytes. */
function rawPeer(frameLimit = 4096) {
  const toPeer = new PassThrough();
  const fromPeer = new PassThrough();
  const reports: string[] = [];
  const peer = new RpcPeer(toPeer, fromPeer, { name: "server", frameLimit, onProtocolError: (m) => reports.push(m) });
  const held = new Inbox<{ id: RequestId; release: () => void }>();
  let running = 0;
  peer.handle(Add, (p) => ok({ sum: p.a + p.b }));
  peer.handle(Fail, (p) => err("tool_failed", "e".repeat(p.bytes)));
  peer.handle(Cyclic, () => {
    const o: Record<string, unknown> = {};
    o.self = o;
    return ok(o);
  });
  peer.handle(NotAResult, () => ({ value: 1 }) as never);
  peer.handle(
    Hold,
    (_p, ctx) =>
      new Promise((resolve) => {
        running++;
        held.push({ id: ctx.requestId, release: () => resolve(ok({ released: true })) });
        ctx.signal.addEventListener("abort", () => resolve(err("cancelled", "released by a cancel")));
      }),
  );
  const reader = new RawReader();
  const messages: RawMessage[] = [];
  const waiters: Array<() => void> = [];
  fromPeer.on("data", (c: Buffer) => {
    messages.push(...reader.push(c));
    for (const w of waiters.splice(0)) w();
  });
  const answers = (id: string) => messages.filter((x) => x.value.type === "response" && x.id === id);
  /** The `nth` answer with id token `id`, waiting for it. */
  const answer = async (id: string, nth = 0): Promise<RawMessage> => {
    for (;;) {
      const m = answers(id)[nth];
      if (m) return m;
      await new Promise<void>((r) => waiters.push(r));
    }
  };
  return { peer, toPeer, reports, held, running: () => running, messages, answer, answers };
}

describe("rpc peer: bad payloads", () => {
  test("a zero-length frame at the end of a read, and empty, non-UTF-8, non-JSON payloads are reported and skipped", async () => {
    const s = rawPeer();
    s.toPeer.write(header(0)); // alone: the frame ends where the chunk does
    s.toPeer.write(
      Buffer.concat([rawFrame(""), rawFrame(Buffer.from([0xc3, 0x28])), rawFrame("{nope"), rawFrame("null")]),
    );
    s.toPeer.write(requestFrame(1, "add", { a: 1, b: 2 }));
    assert.deepEqual((await s.answer("1")).value.result, { ok: { sum: 3 } });
    assert.equal(s.reports.length, 5, s.reports.join("\n"));
    assert.match(s.reports[0]!, /^server: skipped a 0-byte frame: the frame payload is empty/);
    assert.match(s.reports[2]!, /skipped a 2-byte frame: the frame payload is not valid UTF-8/);
    assert.match(s.reports[3]!, /skipped a 5-byte frame: the frame payload is not JSON/);
    assert.match(s.reports[4]!, /not a valid message/);
    assert.ok(
      s.reports.every((r) => !r.includes("\n")),
      "one line per report",
    );
    assert.ok(!s.peer.isClosed);
  });

  test("a request whose payload is broken is still answered when its type and id can be read", async () => {
    const s = rawPeer();
    const badUtf8 = Buffer.concat([
      Buffer.from('{"type":"request","id":5,"method":"add","params":{"a":"'),
      Buffer.from([0xff]),
      Buffer.from('"}}'),
    ]);
    s.toPeer.write(
      Buffer.concat([
        rawFrame(badUtf8),
        rawFrame('{"type":"request","id":6,"method":"add","params":{"a":1,'),
        rawFrame('{"type":"request","id":7,"params":{}}'),
        requestFrame(8, "add", { a: 0, b: 0 }),
      ]),
    );
    await s.answer("8");
    for (const id of ["5", "6", "7"])
      assert.equal(s.answers(id)[0]?.value.result?.error?.code, "invalid_message", `request ${id}`);
    assert.deepEqual(s.reports, [], "answered, so not reported");
  });

  test("a wrongly shaped message is answered in one line and the peer goes on", async () => {
    const s = rawPeer();
    s.toPeer.write(
      Buffer.concat([rawFrame('{"type":"request","id":3,"method":""}'), requestFrame(4, "add", { a: 2, b: 2 })]),
    );
    const bad = await s.answer("3");
    assert.equal(bad.value.result?.error?.code, "invalid_message");
    assert.deepEqual((await s.answer("4")).value.result, { ok: { sum: 4 } });
  });
});

describe("rpc peer: answers always fit", () => {
  test("an error answer over the frame limit is cut to fit, with a marker saying how much was dropped", async () => {
    const s = rawPeer(4096);
    s.toPeer.write(requestFrame(1, "fail", { bytes: 10_000 }));
    const a = await s.answer("1");
    assert.ok(a.bytes <= 4096, `${a.bytes} bytes`);
    const e = a.value.result?.error;
    assert.equal(e?.code, "tool_failed", "the handler's own error, cut, not a different one");
    const m = /^(e+)…\[truncated (\d+) bytes\]$/.exec(e?.message ?? "");
    assert.ok(m, e?.message.slice(-80));
    assert.equal(m[1]!.length + Number(m[2]), 10_000);
    assert.ok(4096 - a.bytes < 40, "the cut keeps as much as fits");
  });

  test("an error message with multi-byte and escaped characters is cut at a character boundary and still fits", async () => {
    const s = rawPeer(1024);
    const Emoji = defineMethod("emoji", z.object({}), z.null(), ["x"]);
    s.peer.handle(Emoji, () => err("x", '😀"\n\u0001é'.repeat(500)));
    s.toPeer.write(requestFrame(2, "emoji"));
    const a = await s.answer("2");
    assert.ok(a.bytes <= 1024, `${a.bytes} bytes`);
    assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])/.test(a.value.result!.error!.message), "no lone high surrogate");
    assert.match(a.value.result!.error!.message, /…\[truncated \d+ bytes\]$/);
  });

  test("an error answer that echoes a request too large to answer whole still reaches the caller", async () => {
    // The method name nearly fills the limit: the method_not_found answer quoting it cannot fit, nor could an error naming it.
    const s = rawPeer(4096);
    const method = "m".repeat(4000);
    s.toPeer.write(Buffer.concat([requestFrame(1, method), requestFrame(2, "add", { a: 1, b: 1 })]));
    await s.answer("2");
    const a = s.answers("1")[0];
    assert.ok(a, "request 1 got no answer");
    assert.equal(a.value.result?.error?.code, "method_not_found");
    assert.match(a.value.result!.error!.message, /…\[truncated \d+ bytes\]$/);
  });

  test("an ok answer over the limit becomes a frame_too_large error that says the sizes", async () => {
    const s = rawPeer(4096);
    const Big = defineMethod("big", z.object({}), z.string(), []);
    s.peer.handle(Big, () => ok("b".repeat(10_000)));
    s.toPeer.write(requestFrame(1, "big"));
    const e = (await s.answer("1")).value.result?.error;
    assert.equal(e?.code, "frame_too_large");
    const size = JSON.stringify({ type: "response", id: 1, result: { ok: "b".repeat(10_000) } }).length;
    assert.match(
      e!.message,
      new RegExp(`^the response to big was too large: ${size} bytes > the 4096-byte frame limit`),
    );
  });

  test("an answer that cannot be encoded, or is not a Result value, becomes an internal error instead of silence", async () => {
    const s = rawPeer();
    s.toPeer.write(
      Buffer.concat([
        requestFrame(1, "cyclic"),
        requestFrame(2, "not_a_result"),
        requestFrame(3, "add", { a: 0, b: 0 }),
      ]),
    );
    await s.answer("3");
    const cyclic = s.answers("1")[0]?.value.result?.error;
    assert.equal(cyclic?.code, "internal", "cyclic: no answer");
    assert.match(cyclic!.message, /the response to cyclic could not be encoded/);
    const notResult = s.answers("2")[0]?.value.result?.error;
    assert.equal(notResult?.code, "internal", "not_a_result: no answer");
    assert.match(notResult!.message, /not_a_result returned something that is not a Result value/);
  });
});

describe("rpc peer: malformed responses to our calls", () => {
  /** A client peer whose other side is the test. */
  function client() {
    const toPeer = new PassThrough();
    const fromPeer = new PassThrough();
    const peer = new RpcPeer(toPeer, fromPeer, { name: "server" });
    const reader = new RawReader();
    const sent: RawMessage[] = [];
    fromPeer.on("data", (c: Buffer) => sent.push(...reader.push(c)));
    return { peer, toPeer, sent };
  }

  const malformed: Array<[string, (id: number) => Buffer]> = [
    ["an error without a message", (id) => rawFrame(`{"type":"response","id":${id},"result":{"error":{"code":"x"}}}`)],
    ["a result that is no Result value", (id) => rawFrame(`{"type":"response","id":${id},"result":{"value":1}}`)],
    ["no result at all", (id) => rawFrame(`{"type":"response","id":${id}}`)],
    [
      "invalid UTF-8",
      (id) =>
        rawFrame(
          Buffer.concat([
            Buffer.from(`{"type":"response","id":${id},"result":{"ok":{"sum":"`),
            Buffer.from([0xfe]),
            Buffer.from('"}}}'),
          ]),
        ),
    ],
    ["JSON cut short", (id) => rawFrame(`{"type":"response","id":${id},"result":{"ok":{"sum":`)],
  ];

  for (const [what, reply] of malformed) {
    test(`${what}: the pending call settles with an invalid_message error`, async () => {
      const c = client();
      let settled = false;
      const first = c.peer.call(Add, { a: 1, b: 1 }).then((r) => {
        settled = true;
        return r;
      });
      const second = c.peer.call(Add, { a: 2, b: 2 });
      c.toPeer.write(Buffer.concat([reply(1), rawFrame('{"type":"response","id":2,"result":{"ok":{"sum":4}}}')]));
      assert.deepEqual(await second, { ok: { sum: 4 } });
      assert.ok(settled, "the call answered by the malformed response is still pending");
      const r = await first;
      assert.ok("error" in r);
      assert.equal(r.error.code, "invalid_message");
      assert.match(r.error.message, /^the response to add was malformed: /);
    });
  }
});

describe("rpc peer: u64 ids", () => {
  test("ids above 2^53-1 are answered with exactly the same id, cancels find them, and ids outside u64 are not answered", async () => {
    const s = rawPeer();
    const big = ["9007199254740993", "18446744073709551615", "12345678901234567890"];
    const invalid = ["18446744073709551616", "-1", "1.5", "1e400", '"7"', "null"];
    s.toPeer.write(
      Buffer.concat([
        ...big.map((id) => requestFrame(id, "add", { a: 1, b: 1 })),
        ...invalid.map((id) => requestFrame(id, "add", { a: 1, b: 1 })),
        requestFrame(9, "add", { a: 0, b: 0 }),
      ]),
    );
    await s.answer("9");
    for (const id of big) {
      const a = s.answers(id);
      assert.equal(a.length, 1, `id ${id}: ${s.messages.map((m) => m.text).join("\n")}`);
      assert.ok(a[0]!.text.startsWith(`{"type":"response","id":${id},"result":{"ok":{"sum":2}}`), a[0]!.text);
    }
    assert.equal(s.messages.length, big.length + 1, "invalid ids are not answered");
    assert.equal(s.reports.length, invalid.length, s.reports.join("\n"));

    // A cancel with a big id reaches the request with that id.
    s.toPeer.write(requestFrame("18446744073709551614", "hold"));
    assert.equal((await s.held.next()).id, 18446744073709551614n);
    s.toPeer.write(rawFrame('{"type":"cancel","id":18446744073709551614}'));
    assert.equal((await s.answer("18446744073709551614")).value.result?.error?.code, "cancelled");
  });

  test("a request reusing the id of one still in progress is answered duplicate_id and not run", async () => {
    const s = rawPeer();
    s.toPeer.write(
      Buffer.concat([requestFrame(5, "hold"), requestFrame(5, "hold"), requestFrame(6, "add", { a: 0, b: 0 })]),
    );
    await s.answer("6");
    assert.equal(s.running(), 1, "the duplicate did not run");
    const dup = s.answers("5");
    assert.equal(dup.length, 1);
    assert.equal(dup[0]!.value.result?.error?.code, "duplicate_id");
    (await s.held.next()).release();
    assert.deepEqual((await s.answer("5", 1)).value.result, { ok: { released: true } });
  });
});
