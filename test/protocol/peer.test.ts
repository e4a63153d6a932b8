import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { setImmediate } from "node:timers";
import { z } from "zod";
import type { RequestId } from "../../src/contracts/envelope.ts";
import { defineMethod, defineNotification } from "../../src/contracts/method.ts";
import { encodeFrame, FrameDecoder } from "../../src/protocol/frame.ts";
import { RpcPeer } from "../../src/protocol/peer.ts";
import { err, ok } from "../../src/util/result.ts";
import { peerPair } from "../support/streams.ts";

const Add = defineMethod("add", z.object({ a: z.number(), b: z.number() }), z.object({ sum: z.number() }), []);
const Wait = defineMethod("wait", z.object({ ms: z.number() }), z.object({ waited: z.boolean() }), []);
const Boom = defineMethod("boom", z.object({}), z.null(), []);
const Big = defineMethod("big", z.object({ bytes: z.number() }), z.string(), []);
const Progress = defineNotification("progress", z.object({ pct: z.number() }));

/** Resolves once `cond` holds, checking after each turn of the event loop (no fixed delay). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 10_000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(cond(), `gave up waiting for ${what}`);
}

function setup() {
  const pair = peerPair({ frameLimit: 4096 }, { frameLimit: 4096 });
  const cancelled: RequestId[] = [];
  const started: RequestId[] = [];
  pair.right.handle(Add, (p) => ok({ sum: p.a + p.b }));
  pair.right.handle(
    Wait,
    (p, ctx) =>
      new Promise((resolve) => {
        started.push(ctx.requestId);
        const t = setTimeout(() => resolve(ok({ waited: true })), p.ms);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(t);
          cancelled.push(ctx.requestId);
          resolve(err("cancelled", "stopped"));
        });
      }),
  );
  pair.right.handle(Boom, () => {
    throw new Error("kaboom");
  });
  pair.right.handle(Big, (p) => ok("x".repeat(p.bytes)));
  return { ...pair, cancelled, started };
}

describe("rpc peer", () => {
  test("after its input ends a server answers what it is running, unless its client is gone: then it closes and aborts them", async () => {
    let gone = false;
    const { left, right, leftToRight } = peerPair({}, { answerBeforeEnd: true, clientGone: () => gone });
    const aborted: boolean[] = [];
    let started = false;
    right.handle(Wait, (_p, ctx) => {
      started = true;
      return new Promise((resolve) => {
        ctx.signal.addEventListener("abort", () => {
          aborted.push(true);
          resolve(err("cancelled", "aborted"));
        });
      });
    });
    const call = left.call(Wait, { ms: 0 });
    await until(() => started, "the handler to start");
    leftToRight.end();
    let closed = false;
    void right.closed.then(() => (closed = true));
    // Still answering: the client may only have closed its side.
    await new Promise((r) => setImmediate(r));
    assert.equal(closed, false);
    gone = true;
    await right.closed;
    assert.deepEqual(aborted, [true], "the running handler was aborted");
    void call;
  });

  test("a method fails only with its declared codes or the peer's: an undeclared one is answered as internal, naming it", async () => {
    const Lookup = defineMethod("lookup", z.object({ key: z.string() }), z.string(), ["not_found"]);
    const { left, right } = peerPair();
    right.handle(Lookup, (p) => {
      if (p.key === "missing") return err("not_found", "no such key");
      if (p.key === "stop") return err("cancelled", "stopped by the peer");
      // What a cast lets through: the types refuse this code.
      return err("disk_on_fire" as "not_found", "the disk is on fire");
    });
    assert.deepEqual(await left.call(Lookup, { key: "missing" }), {
      error: { code: "not_found", message: "no such key" },
    });
    assert.deepEqual(await left.call(Lookup, { key: "stop" }), {
      error: { code: "cancelled", message: "stopped by the peer" },
    });
    assert.deepEqual(await left.call(Lookup, { key: "other" }), {
      error: {
        code: "internal",
        message: 'lookup failed with undeclared error code "disk_on_fire": the disk is on fire',
        data: { code: "disk_on_fire" },
      },
    });
  });

  test("requests resolve with typed ok values", async () => {
    const { left } = setup();
    assert.deepEqual(await left.call(Add, { a: 2, b: 3 }), { ok: { sum: 5 } });
  });

  test("1000 concurrent requests all resolve with their own answers", async () => {
    const { left } = setup();
    const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => left.call(Add, { a: i, b: 1 })));
    results.forEach((r, i) => assert.deepEqual(r, { ok: { sum: i + 1 } }));
    assert.equal(left.pendingCount, 0);
  });

  test("unknown methods, bad params and throwing handlers come back as error values", async () => {
    const { left } = setup();
    const unknown = await left.call(defineMethod("nope", z.unknown(), z.unknown(), []), {});
    assert.ok("error" in unknown);
    assert.equal(unknown.error.code, "method_not_found");
    assert.match(unknown.error.message, /unknown method "nope"; right supports: add, big, boom, wait/);

    const bad = await left.call(Add, { a: "two", b: 3 } as never);
    assert.ok("error" in bad);
    assert.equal(bad.error.code, "invalid_params");
    assert.match(bad.error.message, /invalid params for add:.*a/s);

    const boom = await left.call(Boom, {});
    assert.deepEqual(boom, { error: { code: "internal", message: "boom failed: kaboom" } });
    // the connection survives all three
    assert.deepEqual(await left.call(Add, { a: 1, b: 1 }), { ok: { sum: 2 } });
  });

  test("a result that does not match the method's schema is reported, not trusted", async () => {
    const { left, right } = setup();
    right.handle(defineMethod("liar", z.unknown(), z.unknown(), []), () => ok({ sum: "not a number" }));
    const r = await left.call(defineMethod("liar", z.unknown(), z.object({ sum: z.number() }), []), {});
    assert.ok("error" in r);
    assert.equal(r.error.code, "invalid_result");
  });

  test("cancelling a call aborts the handler on the other side", async () => {
    const { left, cancelled, started } = setup();
    const ctrl = new AbortController();
    const call = left.call(Wait, { ms: 10_000 }, { signal: ctrl.signal });
    await until(() => started.length === 1, "the remote handler to start");
    ctrl.abort();
    const r = await call;
    assert.ok("error" in r);
    assert.equal(r.error.code, "cancelled");
    await until(() => cancelled.length === 1, "the remote handler to see the cancellation");
    assert.equal(left.pendingCount, 0);
  });

  test("a timeout resolves with a timeout error and cancels remotely", async () => {
    const { left, cancelled } = setup();
    const r = await left.call(Wait, { ms: 10_000 }, { timeoutMs: 30 });
    assert.ok("error" in r);
    assert.equal(r.error.code, "timeout");
    assert.match(r.error.message, /wait got no answer from left within 30 ms/);
    await until(() => cancelled.length === 1, "the remote cancellation");
  });

  test("notifications are delivered and validated", async () => {
    const { left, right } = setup();
    const seen: number[] = [];
    const protocolErrors: string[] = [];
    right.onNotification(Progress, (p) => seen.push(p.pct));
    (right as unknown as { options: { onProtocolError: (m: string) => void } }).options.onProtocolError = (m) =>
      protocolErrors.push(m);
    left.notify(Progress, { pct: 10 });
    left.notify(Progress, { pct: "x" } as never);
    left.notify(Progress, { pct: 90 });
    await left.call(Add, { a: 0, b: 0 }); // ordering barrier
    assert.deepEqual(seen, [10, 90]);
    assert.equal(protocolErrors.length, 1);
    assert.match(protocolErrors[0]!, /bad progress notification/);
  });

  test("a response over the frame limit becomes a frame_too_large error for the caller", async () => {
    const { left } = setup();
    const r = await left.call(Big, { bytes: 10_000 });
    assert.ok("error" in r);
    assert.equal(r.error.code, "frame_too_large");
    assert.match(r.error.message, /response to big was too large/);
    assert.deepEqual(await left.call(Big, { bytes: 10 }), { ok: "x".repeat(10) });
  });

  test("a request over the frame limit is refused locally and the connection survives", async () => {
    const { left } = setup();
    const r = await left.call(Add, { a: 1, b: 2, pad: "y".repeat(5000) } as never);
    assert.ok("error" in r);
    assert.equal(r.error.code, "frame_too_large");
    assert.equal(left.pendingCount, 0);
    assert.deepEqual(await left.call(Add, { a: 1, b: 2 }), { ok: { sum: 3 } });
  });

  test("a malformed request envelope with an id still gets an answer", async () => {
    const { left, leftToRight, rightToLeft } = setup();
    const answers: unknown[] = [];
    const { FrameDecoder } = await import("../../src/protocol/frame.ts");
    const dec = new FrameDecoder();
    rightToLeft.on("data", (c: Buffer) => dec.push(c).forEach((f) => f.kind === "frame" && answers.push(f.value)));
    const bad = encodeFrame({ type: "request", id: 99, method: "" });
    assert.ok("ok" in bad);
    leftToRight.write(bad.ok);
    await left.call(Add, { a: 0, b: 0 });
    const a = answers.find((x) => (x as { id: number }).id === 99) as { result: { error: { code: string } } };
    assert.equal(a.result.error.code, "invalid_message");
  });

  test("when the peer goes away every pending call fails with a clear error", async () => {
    const { left, leftToRight, rightToLeft, started } = setup();
    const calls = [left.call(Wait, { ms: 10_000 }), left.call(Wait, { ms: 10_000 })];
    await until(() => started.length === 2, "both calls to reach the other side");
    rightToLeft.end(); // the other side's output closes
    leftToRight.resume();
    for (const r of await Promise.all(calls)) {
      assert.ok("error" in r);
      assert.equal(r.error.code, "peer_closed");
      assert.match(r.error.message, /wait failed: left closed the connection \(its output stream ended\)/);
    }
    const after = await left.call(Add, { a: 1, b: 1 });
    assert.ok("error" in after && after.error.code === "peer_closed");
    assert.equal(await left.closed, "its output stream ended");
  });

  test("garbage on the input closes the connection with the diagnosis", async () => {
    const { left, rightToLeft } = setup();
    const pending = left.call(Wait, { ms: 10_000 });
    rightToLeft.write("Traceback (most recent call last):\n");
    const r = await pending;
    assert.ok("error" in r);
    assert.match(r.error.message, /protocol error: frame header announces \d+ bytes.*printed to stdout/);
  });

  test("a handler can answer before it returns; its return value is then dropped", async () => {
    const pair = peerPair();
    const Start = defineMethod("start", z.object({}), z.object({ started: z.number() }), []);
    pair.right.handle(Start, (_p, ctx) => {
      pair.right.cork();
      ctx.respond(ok({ started: 1 }));
      pair.right.notify(Progress, { pct: 100 });
      ctx.respond(ok({ started: 2 })); // a second answer is ignored
      pair.right.uncork();
      return ok({ started: 3 });
    });
    const chunks: Buffer[] = [];
    pair.rightToLeft.on("data", (c: Buffer) => chunks.push(c));
    const notes: number[] = [];
    pair.left.onNotification(Progress, (p) => notes.push(p.pct));
    assert.deepEqual(await pair.left.call(Start, {}), { ok: { started: 1 } });
    await until(() => notes.length === 1, "the notification");
    assert.deepEqual(notes, [100]);
    assert.equal(chunks.length, 1, "the early answer and the notification were written together");
    // Exactly one response frame went out.
    const frames = new FrameDecoder()
      .push(Buffer.concat(chunks))
      .map((f) => (f.kind === "frame" ? (f.value as { type: string }).type : f.kind));
    assert.deepEqual(frames, ["response", "notification"]);
  });

  test("cork nests, flush writes what is held without uncorking, close writes the rest", async () => {
    const pair = peerPair();
    const chunks: Buffer[] = [];
    pair.rightToLeft.on("data", (c: Buffer) => chunks.push(c));
    const notes: number[] = [];
    pair.left.onNotification(Progress, (p) => notes.push(p.pct));
    // In-process streams deliver within a turn of the event loop: one turn is enough to see a write.
    const settle = () => new Promise((r) => setImmediate(r));
    pair.right.cork();
    pair.right.cork();
    pair.right.notify(Progress, { pct: 1 });
    pair.right.uncork();
    await settle();
    assert.equal(chunks.length, 0, "still corked once");
    pair.right.flush();
    await settle();
    assert.deepEqual(notes, [1]);
    assert.ok(pair.right.corked);
    pair.right.notify(Progress, { pct: 2 });
    pair.right.notify(Progress, { pct: 3 });
    pair.right.uncork();
    await settle();
    assert.deepEqual(notes, [1, 2, 3]);
    assert.equal(chunks.length, 2, "one write per flush");
    pair.right.uncork(); // unbalanced: ignored
    pair.right.cork();
    pair.right.notify(Progress, { pct: 4 });
    pair.right.close();
    await settle();
    assert.deepEqual(notes, [1, 2, 3, 4], "closing writes what was held");
  });

  test("a write that throws (the other side is gone) fails the call with the reason describeEnd adds, and a later call too", async () => {
    const input = new PassThrough();
    const broken = {
      write: () => {
        throw new Error("EPIPE: broken pipe, write");
      },
      end: () => undefined,
      on: () => broken,
    };
    let gone!: () => void;
    const exited = new Promise<void>((r) => (gone = r));
    const peer = new RpcPeer(input, broken, {
      name: "child",
      describeEnd: async () => (await exited, "process exited with code 4; last stderr: fatal"),
    });
    const first = peer.call(Add, { a: 1, b: 2 });
    const second = peer.call(Add, { a: 3, b: 4 });
    gone();
    for (const r of [await first, await second]) {
      assert.ok("error" in r);
      assert.match(
        r.error.message,
        /writing to it failed: EPIPE: broken pipe, write; process exited with code 4; last stderr: fatal/,
      );
    }
    assert.equal(peer.failed, true);
  });
});
