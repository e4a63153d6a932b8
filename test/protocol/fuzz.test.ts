/**
 * Protocol fuzz: batches of random frames (lengths from 0 to the limit and over it, truncated
 * frames, invalid UTF-8, 100k-deep JSON, wrong types, duplicate ids, u64 ids, interleaved
 * requests) against `relay executor` and `relay code-mode-host` on real pipes, and against the
 * parent's reader (the RpcPeer a parent builds around a child) in process.
 *
 * Every frame is planned with the answers it must get: a request with a readable id gets exactly
 * one answer, with exactly its id; nothing else is answered. After each batch the peer answers a
 * good request; a batch that ends in a fatal frame error (over-limit header, stream cut inside a
 * frame) must instead end the peer with exit 1 and one "stopped" line, and a fresh one starts.
 * A crash (a stack trace on stderr, an uncaught exception in process) fails the run; a hang is
 * caught by the runner's timeout and by the "still waiting for" notes naming the batch.
 *
 * The seed is printed; RELAY_FUZZ_SEED=<seed> replays a run, RELAY_FUZZ_BATCHES scales it.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { after, describe, test } from "node:test";
import { z } from "zod";
import { CodeModeMethods } from "../../src/contracts/code-mode.ts";
import { defineMethod } from "../../src/contracts/method.ts";
import { RpcPeer } from "../../src/protocol/peer.ts";
import { ok, type Result } from "../../src/util/result.ts";
import { LONG_TESTS } from "../support/long.ts";
import { header, RawChild, type RawMessage, RawReader, rawFrame, requestFrame } from "../support/raw-frames.ts";
import { useTestRelay } from "../support/self.ts";
import { until } from "../support/wait.ts";

useTestRelay();

const SEED = Number(process.env.RELAY_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32));
// npm test runs a few batches with a fresh seed each time; the long step (RELAY_LONG_TESTS=1) runs 30.
const BATCHES = Number(process.env.RELAY_FUZZ_BATCHES ?? (LONG_TESTS ? 30 : 8));
const FRAMES_PER_BATCH = 80;
/** A batch ending in a fatal frame error, then a fresh peer, every this many batches. */
const FATAL_EVERY = 7;
process.stderr.write(
  `protocol fuzz: seed ${SEED} (RELAY_FUZZ_SEED=${SEED} replays it), ${BATCHES} batches of ${FRAMES_PER_BATCH} frames per peer\n`,
);

// ---- seeded randomness --------------------------------------------------------------------

/** mulberry32: small, fast, and the same sequence on every runtime for a seed. */
class Rng {
  constructor(private state: number) {}
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = Math.floor(this.next() * 256);
    return b;
  }
  /** A length: mostly small, sometimes large, rarely up to `max`. */
  length(max: number): number {
    const r = this.next();
    if (r < 0.7) return this.int(1, 64);
    if (r < 0.95) return this.int(65, 4096);
    return this.int(4097, Math.max(4097, Math.min(max, 256 * 1024)));
  }
  text(n: number): string {
    const alphabet = 'abc{}[]":,\\ 01-.e\n\u00e9\u2028😀\u0000';
    let s = "";
    for (let i = 0; i < n; i++) s += this.pick([...alphabet]);
    return s;
  }
}

// ---- frames -------------------------------------------------------------------------------

/** A frame to send and the ids (as tokens) that must each get exactly one answer for it. */
interface Planned {
  bytes: Buffer;
  answers: string[];
}

interface MethodGen {
  method: string;
  /** Params for a request: any shape (a wrong one is answered invalid_params). */
  params(r: Rng): unknown;
}

const DEEP = 100_000;
const deepArray = "[".repeat(DEEP) + "]".repeat(DEEP);
const deepObject = '{"a":'.repeat(DEEP) + "1" + "}".repeat(DEEP);

const BIG_IDS = ["9007199254740992", "9007199254740993", "18446744073709551615", "12345678901234567890"];
const BAD_IDS = [
  "18446744073709551616",
  "-1",
  "1.5",
  "1e400",
  '"5"',
  "null",
  "true",
  "[]",
  "{}",
  "99999999999999999999999",
];
/** Wrong as a type (no "request": a readable request is answered) and as a method name. */
const WRONG_TYPES = ["5", "null", "[1]", '{"a":1}', '"x"', '"Request"'];

class Planner {
  private nextId = 1;
  /** Request ids planned so far in this batch, for duplicates. */
  private recent: string[] = [];

  constructor(
    private readonly r: Rng,
    private readonly methods: readonly MethodGen[],
    readonly limit: number,
  ) {}

  freshId(): string {
    return String(this.nextId++);
  }

  startBatch(): void {
    this.recent = [];
  }

  /** One random frame of any non-fatal kind. */
  frame(): Planned {
    const r = this.r;
    const kind = r.int(0, 21);
    const m = r.pick(this.methods);
    switch (kind) {
      case 0:
      case 1:
      case 2:
      case 3:
        return this.request(this.freshId(), m.method, JSON.stringify(m.params(r)));
      case 4:
        return this.request(r.pick(BIG_IDS), m.method, JSON.stringify(m.params(r)));
      case 5: // duplicate id (of a request of this batch, possibly still in flight)
        return this.request(
          this.recent.length ? r.pick(this.recent) : this.freshId(),
          m.method,
          JSON.stringify(m.params(r)),
        );
      case 6: // an id outside u64, or not a number: nothing can be answered
        return {
          bytes: rawFrame(`{"type":"request","id":${r.pick(BAD_IDS)},"method":"${m.method}","params":{}}`),
          answers: [],
        };
      case 7: {
        // readable type and id, wrong shape: answered invalid_message
        const id = this.freshId();
        const body = r.pick([
          `"method":${r.pick(WRONG_TYPES)}`,
          '"params":{}',
          `"method":"${m.method}","extra":${r.pick(WRONG_TYPES)},"method":5`,
          '"method":"request","params":5',
        ]);
        return { bytes: rawFrame(`{"type":"request","id":${id},${body}}`), answers: [id] };
      }
      case 8: {
        // cut short after the id: not JSON, yet answerable
        const id = this.freshId();
        const whole = `{"type":"request","id":${id},"method":"${m.method}","params":${JSON.stringify(m.params(r))}}`;
        const cut = whole.slice(0, r.int(`{"type":"request","id":${id},`.length, whole.length - 1));
        return { bytes: rawFrame(cut), answers: [id] };
      }
      case 9: {
        // invalid UTF-8 inside a request
        const id = this.freshId();
        const bad = Buffer.concat([
          Buffer.from(`{"type":"request","id":${id},"method":"${m.method}","params":{"s":"`),
          r.pick([
            Buffer.from([0xff]),
            Buffer.from([0xc3, 0x28]),
            Buffer.from([0xed, 0xa0, 0x80]),
            Buffer.from([0xf0, 0x9f]),
          ]),
          Buffer.from('"}}'),
        ]);
        return { bytes: rawFrame(bad), answers: [id] };
      }
      case 10:
        return {
          bytes: rawFrame(
            `{"type":"notification","method":${r.pick([`"${m.method}"`, '"x"', "5"])},"params":${JSON.stringify(m.params(r))}}`,
          ),
          answers: [],
        };
      case 11:
        return {
          bytes: rawFrame(`{"type":"cancel","id":${r.pick([...this.recent, "0", r.pick(BIG_IDS), r.pick(BAD_IDS)])}}`),
          answers: [],
        };
      case 12: // a response nobody asked for (above any id a peer under test has minted)
        return {
          bytes: rawFrame(
            `{"type":"response","id":${r.int(1e6, 2e6)},"result":${r.pick(['{"ok":1}', '{"error":{"code":"x","message":"y"}}', '{"bad":1}', "5"])}}`,
          ),
          answers: [],
        };
      case 13:
        return { bytes: header(0), answers: [] };
      case 14: // random bytes of a random length
        return { bytes: rawFrame(r.bytes(r.length(this.limit))), answers: [] };
      case 15: // text that is not JSON (or JSON that is no message)
        return { bytes: rawFrame(r.text(r.length(4096))), answers: [] };
      case 16: // deep nesting, on its own: no message
        return { bytes: rawFrame(r.pick([deepArray, deepObject])), answers: [] };
      case 17: // deep nesting inside a request: answered (invalid_params or whatever the method says)
        return this.request(this.freshId(), m.method, r.pick([deepArray, deepObject]));
      case 18:
        return { bytes: rawFrame(`{"type":${r.pick(WRONG_TYPES)},"id":${this.freshId()}}`), answers: [] };
      case 19: // a wrong envelope type with a good id is no request: nothing to answer
        return { bytes: rawFrame(`{"type":"requests","id":${this.freshId()},"method":"${m.method}"}`), answers: [] };
      case 20: // an unknown method
        return this.request(this.freshId(), `fuzz/${r.text(r.int(0, 12)).replace(/[^a-z]/g, "")}`, "{}");
      default:
        return this.request(this.freshId(), m.method, JSON.stringify(m.params(r)));
    }
  }

  /** A request padded so that its payload is exactly the frame limit. */
  atLimit(): Planned {
    const id = this.freshId();
    const m = this.methods[0]!;
    const empty = `{"type":"request","id":${id},"method":"${m.method}","params":{"pad":""}}`;
    const payload = empty.replace('"pad":""', `"pad":"${"p".repeat(this.limit - empty.length)}"`);
    assert.equal(Buffer.byteLength(payload), this.limit);
    return { bytes: rawFrame(payload), answers: [id] };
  }

  /** A batch-ending frame error: an over-limit header, or a frame the stream ends inside. */
  fatal(): { bytes: Buffer; endStream: boolean; expect: RegExp } {
    const r = this.r;
    if (r.chance(0.5)) {
      const n = r.pick([this.limit + 1, r.int(this.limit + 1, 0xffff_ffff), 0xffff_ffff]);
      return {
        bytes: Buffer.concat([header(n), r.bytes(r.int(0, 64))]),
        endStream: false,
        expect: new RegExp(
          `protocol error: frame header announces ${n} bytes, over the ${this.limit}-byte limit; the connection is closed\\.`,
        ),
      };
    }
    const n = r.int(1, 2000);
    const cutHeader = r.chance(0.3);
    const bytes = cutHeader ? header(n).subarray(0, r.int(1, 3)) : Buffer.concat([header(n), r.bytes(r.int(0, n - 1))]);
    return { bytes, endStream: true, expect: /stream ended inside a frame/ };
  }

  private request(id: string, method: string, paramsJson: string): Planned {
    this.recent.push(id);
    return {
      bytes: rawFrame(`{"type":"request","id":${id},"method":${JSON.stringify(method)},"params":${paramsJson}}`),
      answers: [id],
    };
  }
}

// ---- the peers under test -------------------------------------------------------------------

/** One running peer, spoken to in raw bytes. */
interface Conn {
  write(bytes: Buffer): Promise<void>;
  end(): void;
  readonly messages: RawMessage[];
  when(cond: () => boolean): Promise<boolean>;
  /** How it ended: exit code (in process: 1 when the peer failed) and its last line. */
  ended(): Promise<{ code: number | null; lastLine: string }>;
  /** Output that is not the peer's own one-line reports: stack traces, uncaught exceptions. */
  foreign(): string[];
  /** Between batches: answer what the peer asked us (delegate requests), any way at all. */
  answerPeer?(r: Rng): Promise<void>;
  /** Before a batch: calls the peer makes to us, with the replies to put in the batch. */
  ownCalls?(r: Rng): Planned[];
  /** After a batch: every call the peer made resolved as its reply said. */
  checkOwnCalls?(): Promise<void>;
}

interface Target {
  name: string;
  limit: number;
  methods: MethodGen[];
  probe: string;
  start(): Conn;
}

class ChildConn implements Conn {
  private readonly c: RawChild;
  private answered = new Set<string>();
  constructor(
    args: string[],
    private readonly name: string,
  ) {
    this.c = new RawChild(args);
  }
  get messages(): RawMessage[] {
    return this.c.messages;
  }
  write(bytes: Buffer): Promise<void> {
    return this.c.write(bytes);
  }
  end(): void {
    this.c.end();
  }
  when(cond: () => boolean): Promise<boolean> {
    return this.c.when(cond);
  }
  async ended(): Promise<{ code: number | null; lastLine: string }> {
    const exit = await this.c.exited;
    const lines = this.c.stderr.trimEnd().split("\n");
    return { code: exit.code, lastLine: lines[lines.length - 1] ?? "" };
  }
  foreign(): string[] {
    return this.c.stderr.split("\n").filter((l) => l !== "" && !l.startsWith(`relay: ${this.name}`));
  }
  async answerPeer(r: Rng): Promise<void> {
    const asks = this.c.messages.filter(
      (m) => m.value.type === "request" && m.id !== undefined && !this.answered.has(m.id),
    );
    const replies: Buffer[] = [];
    for (const m of asks) {
      this.answered.add(m.id!);
      const okReply =
        m.value.method === "codemode/notify" ? '{"ok":{"delivered":true}}' : '{"ok":{"result":{"fuzz":1}}}';
      replies.push(
        r.pick([
          rawFrame(`{"type":"response","id":${m.id},"result":${okReply}}`),
          rawFrame(`{"type":"response","id":${m.id},"result":{"error":{"code":"x"}}}`),
          rawFrame(`{"type":"response","id":${m.id},"result":{"ok":`),
          rawFrame(
            Buffer.concat([
              Buffer.from(`{"type":"response","id":${m.id},"result":{"ok":"`),
              Buffer.from([0xff]),
              Buffer.from('"}}'),
            ]),
          ),
          rawFrame(`{"type":"response","id":${m.id},"result":{"ok":{"result":${deepArray}}}}`),
        ]),
      );
    }
    if (replies.length) await this.write(Buffer.concat(replies));
  }
}

const Ping = defineMethod("fuzz/ping", z.object({ n: z.number() }), z.object({ n: z.number() }), []);
const Echo = defineMethod("echo", z.unknown(), z.unknown(), []);

/** The parent's reader: the RpcPeer spawnPeer builds around a child's pipes, fed by the fuzz. */
class ParentConn implements Conn {
  readonly messages: RawMessage[] = [];
  private readonly input = new PassThrough();
  private readonly output = new PassThrough();
  private readonly reader = new RawReader();
  private readonly listeners = new Set<() => void>();
  private readonly peer: RpcPeer;
  private readonly reports: string[] = [];
  private closed = false;
  private calls: Array<{ promise: Promise<Result<unknown>>; expect: (r: Result<unknown>) => void }> = [];
  private nextN = 0;
  /** The peer numbers its calls 1, 2, ... and only Ping calls are made. */
  private lastCallId = 0;
  static uncaught: unknown[] = [];

  constructor(limit: number) {
    this.peer = new RpcPeer(this.input, this.output, {
      name: "child",
      frameLimit: limit,
      onProtocolError: (m) => this.reports.push(m),
    });
    // What a parent serves to a child: the code-mode delegate requests, and a plain echo.
    this.peer.handle(CodeModeMethods.invokeTool, async (call) => ok({ result: call.input }));
    this.peer.handle(CodeModeMethods.notify, () => ok({ delivered: true as const }));
    this.peer.handle(Echo, (p) => ok(p));
    this.output.on("data", (c: Buffer) => {
      this.messages.push(...this.reader.push(c));
      this.wake();
    });
    void this.peer.closed.then(() => {
      this.closed = true;
      this.wake();
    });
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => (this.closed ? resolve() : this.input.write(bytes, () => resolve())));
  }
  end(): void {
    this.input.end();
  }
  when(cond: () => boolean): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (cond()) return done(true);
        if (this.closed && this.output.readableLength === 0) done(false);
      };
      const done = (v: boolean) => {
        this.listeners.delete(check);
        resolve(v);
      };
      this.listeners.add(check);
      check();
    });
  }
  async ended(): Promise<{ code: number | null; lastLine: string }> {
    const reason = await this.peer.closed;
    return { code: this.peer.failed ? 1 : 0, lastLine: reason };
  }
  foreign(): string[] {
    return [
      ...this.reports.filter((m) => !m.startsWith("child: ") || m.includes("\n")),
      ...ParentConn.uncaught.map(String),
    ];
  }

  /** The parent calls the child; the fuzz answers each call somewhere in the batch, well or badly. */
  ownCalls(r: Rng): Planned[] {
    const replies: Planned[] = [];
    for (let i = 0, n = r.int(1, 6); i < n; i++) {
      const value = this.nextN++;
      const promise = this.peer.call(Ping, { n: value });
      const id = String(++this.lastCallId);
      const choice = r.int(0, 5);
      const text = [
        `{"type":"response","id":${id},"result":{"ok":{"n":${value}}}}`,
        `{"type":"response","id":${id},"result":{"error":{"code":"fuzz","message":"no"}}}`,
        `{"type":"response","id":${id},"result":{"ok":{"n":"not a number"}}}`,
        `{"type":"response","id":${id},"result":{"error":{"code":5}}}`,
        `{"type":"response","id":${id},"result":{"ok":{"n":`,
        `{"type":"response","id":${id},"result":{"ok":${deepArray}}}`,
      ][choice]!;
      // Nesting beyond the protocol's limit makes the frame unreadable: a malformed reply.
      const expectCode = [undefined, "fuzz", "invalid_result", "invalid_message", "invalid_message", "invalid_message"][
        choice
      ];
      this.calls.push({
        promise,
        expect: (res) => {
          if (expectCode === undefined) assert.deepEqual(res, { ok: { n: value } });
          else
            assert.ok(
              "error" in res && res.error.code === expectCode,
              `call ${id} (reply ${choice}): ${JSON.stringify(res).slice(0, 300)}`,
            );
        },
      });
      // and sometimes a second answer right after the first, which must change nothing
      const again = r.chance(0.2) ? [rawFrame(`{"type":"response","id":${id},"result":{"ok":{"n":-1}}}`)] : [];
      replies.push({ bytes: Buffer.concat([rawFrame(text), ...again]), answers: [] });
    }
    return replies;
  }

  async checkOwnCalls(): Promise<void> {
    const calls = this.calls;
    this.calls = [];
    for (const c of calls) c.expect(await until(c.promise, "a call of the parent's to settle"));
  }

  /** A fatal frame fails the parent's pending calls: they must still settle. */
  async settleAfterClose(): Promise<void> {
    const calls = this.calls;
    this.calls = [];
    for (const c of calls) await until(c.promise, "a call of the parent's to settle after a fatal frame");
  }

  private wake(): void {
    for (const l of [...this.listeners]) l();
  }
}

const executorMethods: MethodGen[] = [
  { method: "process/list", params: () => ({}) },
  { method: "tools/list", params: (r) => r.pick([{}, undefined, [], "x"]) },
  {
    method: "process/write",
    params: (r) =>
      r.pick([
        { process_id: r.int(1, 1000), input: "x", yield_time_ms: 0, max_output_tokens: 10 },
        { process_id: "x" },
        {},
      ]),
  },
  { method: "process/terminate", params: (r) => r.pick([{ process_id: r.int(1, 1000) }, { process_id: -1.5 }]) },
  {
    method: "tools/call",
    params: (r) =>
      r.pick([
        { name: "no_such_tool", arguments: {}, cwd: "/nonexistent" },
        { name: "read_file", arguments: { path: "/nonexistent/fuzz" }, cwd: "/nonexistent" },
        { name: 5 },
      ]),
  },
  { method: "skills/list", params: (r) => r.pick([{ roots: [] }, { roots: ["/nonexistent/fuzz"] }, { roots: "x" }]) },
  { method: "skills/read", params: () => ({ path: "/nonexistent/fuzz/SKILL.md" }) },
  // Never valid: nothing is run.
  { method: "process/exec", params: (r) => r.pick([{}, { command: "rm -rf /" }, { command: [], cwd: 5 }]) },
];

const scripts = [
  'text("hi")',
  'await new Promise((r) => setTimeout(r, 3)); text("t")',
  'throw new Error("fuzz")',
  "text(JSON.stringify(await tools.probe({ a: 1 })))",
  'notify("n"); text("x")',
  'yield_control(); text("after")',
  "const x = ",
];

const codeModeMethods: MethodGen[] = [
  { method: "codemode/hello", params: () => ({}) },
  {
    method: "codemode/create_session",
    params: (r) => r.pick([{}, { limits: { cpu_limit_ms: 1000 } }, { limits: "x" }]),
  },
  {
    method: "codemode/execute",
    params: (r) => ({
      session_id: r.int(1, 4),
      request: r.chance(0.9)
        ? {
            tool_call_id: "f",
            enabled_tools: [{ name: "probe" }],
            source: r.pick(scripts),
            yield_time_ms: r.int(0, 20),
          }
        : { source: 5 },
    }),
  },
  {
    method: "codemode/wait",
    params: (r) => ({
      session_id: r.int(1, 4),
      request: { cell_id: String(r.int(1, 30)), yield_time_ms: r.int(0, 10) },
    }),
  },
  { method: "codemode/terminate", params: (r) => ({ session_id: r.int(1, 4), cell_id: String(r.int(1, 30)) }) },
  { method: "codemode/shutdown_session", params: (r) => r.pick([{ session_id: r.int(5, 9) }, { session_id: "x" }]) },
];

const parentMethods: MethodGen[] = [
  { method: "echo", params: (r) => r.pick([{ a: 1 }, "x", null, []]) },
  {
    method: "codemode/invoke_tool",
    params: (r) =>
      r.pick([
        {
          session_id: 1,
          cell_id: "1",
          call_id: "c",
          runtime_tool_call_id: "t",
          tool_name: "x",
          tool_kind: "function",
          input: {},
        },
        { session_id: "x" },
      ]),
  },
  { method: "codemode/notify", params: (r) => r.pick([{ session_id: 1, call_id: "c", cell_id: "1", text: "n" }, {}]) },
];

const targets: Target[] = [
  {
    name: "executor",
    limit: 1 << 20,
    methods: executorMethods,
    probe: "process/list",
    start: () => new ChildConn(["executor", "--frame-limit", String(1 << 20)], "executor"),
  },
  {
    name: "code-mode-host",
    limit: 16 * 1024 * 1024,
    methods: codeModeMethods,
    probe: "codemode/hello",
    start: () => new ChildConn(["code-mode-host"], "code-mode-host"),
  },
  {
    name: "parent reader",
    limit: 1 << 20,
    methods: parentMethods,
    probe: "echo",
    start: () => new ParentConn(1 << 20),
  },
];

// ---- the run --------------------------------------------------------------------------------

/** Splits `bytes` at random points: frames arrive cut across reads and coalesced. */
function chunks(r: Rng, bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = r.chance(0.3) ? r.int(1, 16) : r.int(1, 64 * 1024);
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  return out;
}

async function send(conn: Conn, r: Rng, frames: Planned[]): Promise<void> {
  for (const c of chunks(r, Buffer.concat(frames.map((f) => f.bytes)))) await conn.write(c);
}

function plannedAnswers(batch: Planned[]): Map<string, number> {
  const expected = new Map<string, number>();
  for (const p of batch) for (const id of p.answers) expected.set(id, (expected.get(id) ?? 0) + 1);
  return expected;
}

/** Answers per id token among the messages since index `from`. */
function countAnswers(conn: Conn, from: number): Map<string, number> {
  const seen = new Map<string, number>();
  for (const m of conn.messages.slice(from)) {
    if (m.value.type !== "response") continue;
    assert.ok(m.id !== undefined, `an answer without a plain id token: ${m.text.slice(0, 200)}`);
    seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
  }
  return seen;
}

/** Every message the peer wrote is a well-formed envelope within the limit. */
function checkShapes(conn: Conn, limit: number, from: number): void {
  for (const m of conn.messages.slice(from)) {
    assert.ok(m.bytes <= limit, `a ${m.bytes}-byte frame over the ${limit}-byte limit`);
    if (m.value.type !== "response") continue;
    const res = m.value.result;
    const isOk = res !== undefined && Object.keys(res).length === 1 && "ok" in res;
    const isErr =
      res?.error !== undefined && typeof res.error.code === "string" && typeof res.error.message === "string";
    assert.ok(isOk || isErr, `an answer that is not a Result value: ${m.text.slice(0, 300)}`);
  }
}

/** A batch ending in a fatal frame error: the peer must stop with exit 1 and one clear line. */
async function fatalBatch(
  conn: Conn,
  t: Target,
  r: Rng,
  planner: Planner,
  batch: Planned[],
  where: string,
): Promise<void> {
  const from = conn.messages.length;
  const f = planner.fatal();
  await send(conn, r, [...batch, { bytes: f.bytes, answers: [] }]);
  if (f.endStream) conn.end();
  const end = await until(conn.ended(), `${where}: the peer to stop on a fatal frame`);
  assert.equal(end.code, 1, `${where}: exit code after a fatal frame`);
  assert.match(end.lastLine, f.expect, where);
  assert.deepEqual(conn.foreign(), [], `${where}: output that is not relay's own`);
  // Answers to what came before the fatal frame may or may not have left; none is extra or wrong.
  const expected = plannedAnswers(batch);
  for (const [id, n] of countAnswers(conn, from))
    assert.ok(n <= (expected.get(id) ?? 0), `${where}: ${n} answers to request ${id}`);
  checkShapes(conn, t.limit, from);
  if (conn instanceof ParentConn) await conn.settleAfterClose();
}

/** A batch the peer must survive: every readable request answered exactly once, then the good one. */
async function survivableBatch(
  conn: Conn,
  t: Target,
  r: Rng,
  planner: Planner,
  batch: Planned[],
  where: string,
): Promise<void> {
  const from = conn.messages.length;
  const probe = planner.freshId();
  batch.push({ bytes: requestFrame(probe, t.probe), answers: [probe] });
  await send(conn, r, batch);
  const expected = plannedAnswers(batch);
  const complete = () => {
    const seen = countAnswers(conn, from);
    for (const [id, n] of expected) if ((seen.get(id) ?? 0) < n) return false;
    return true;
  };
  const alive = await until(conn.when(complete), `${where}: the answers to every request with a readable id`);
  assert.ok(alive, `${where}: the peer stopped before answering; ${conn.foreign().join("\n")}`);
  // Earlier batches were complete, so whatever came since answers this one: exactly as planned.
  for (const [id, n] of countAnswers(conn, from))
    assert.equal(n, expected.get(id) ?? 0, `${where}: answers to request ${id}`);
  const probeAnswer = conn.messages.find((m) => m.value.type === "response" && m.id === probe);
  assert.ok(
    probeAnswer?.value.result && "ok" in probeAnswer.value.result,
    `${where}: the good request was not answered ok: ${probeAnswer?.text}`,
  );
  checkShapes(conn, t.limit, from);
  assert.deepEqual(conn.foreign(), [], `${where}: output that is not relay's own`);
  await conn.checkOwnCalls?.();
}

async function fuzzTarget(t: Target, seed: number): Promise<{ frames: number; ms: number; restarts: number }> {
  const r = new Rng(seed);
  const started = performance.now();
  let conn = t.start();
  let planner = new Planner(r, t.methods, t.limit);
  let frames = 0;
  let restarts = 0;
  for (let b = 0; b < BATCHES; b++) {
    const where = `${t.name}, batch ${b} (seed ${seed})`;
    planner.startBatch();
    const batch: Planned[] = [];
    for (let i = 0; i < FRAMES_PER_BATCH; i++) batch.push(planner.frame());
    if (b === 0) batch.splice(r.int(0, batch.length), 0, planner.atLimit());
    for (const reply of conn.ownCalls?.(r) ?? []) batch.splice(r.int(0, batch.length), 0, reply);
    frames += batch.length;
    if (b % FATAL_EVERY === FATAL_EVERY - 1) {
      await fatalBatch(conn, t, r, planner, batch, where);
      frames++;
      restarts++;
      conn = t.start();
      planner = new Planner(r, t.methods, t.limit);
      continue;
    }
    await survivableBatch(conn, t, r, planner, batch, where);
    // Its own generator: how many asks arrived by now may vary from run to run, the plan must not.
    await conn.answerPeer?.(new Rng((seed ^ (b * 0x85ebca6b)) >>> 0));
  }
  frames += await lastBatchThenEnd(conn, t, r, planner);
  return { frames, ms: performance.now() - started, restarts };
}

/** A batch followed at once by end of input: every request in it is still answered exactly, then a clean exit. */
async function lastBatchThenEnd(conn: Conn, t: Target, r: Rng, planner: Planner): Promise<number> {
  planner.startBatch();
  const batch: Planned[] = [];
  for (let i = 0; i < FRAMES_PER_BATCH; i++) batch.push(planner.frame());
  const probe = planner.freshId();
  batch.push({ bytes: requestFrame(probe, t.probe), answers: [probe] });
  const from = conn.messages.length;
  await send(conn, r, batch);
  conn.end();
  const end = await until(conn.ended(), `${t.name}: the peer to exit after a clean end`);
  assert.equal(end.code, 0, `${t.name}: exit after a clean end: ${end.lastLine}`);
  assert.deepEqual(conn.foreign(), []);
  if (conn instanceof ParentConn) return batch.length;
  const expected = plannedAnswers(batch);
  for (const [id, n] of expected)
    assert.equal(
      countAnswers(conn, from).get(id) ?? 0,
      n,
      `${t.name}: request ${id} sent right before end of input: answers`,
    );
  checkShapes(conn, t.limit, from);
  return batch.length;
}

describe("protocol fuzz", () => {
  const onUncaught = (e: unknown) => ParentConn.uncaught.push(e);
  process.on("uncaughtException", onUncaught);
  process.on("unhandledRejection", onUncaught);
  after(() => {
    process.off("uncaughtException", onUncaught);
    process.off("unhandledRejection", onUncaught);
  });

  targets.forEach((t, i) => {
    test(`${t.name}: ${BATCHES} batches of random frames; answers exact, no crash, no hang`, async () => {
      const seed = (SEED + i * 0x9e3779b9) >>> 0;
      const { frames, ms, restarts } = await fuzzTarget(t, seed);
      process.stderr.write(
        `protocol fuzz: ${t.name}: ${frames} frames in ${(ms / 1000).toFixed(1)} s (${restarts} fatal frames, each followed by a fresh peer; seed ${seed})\n`,
      );
      assert.ok(frames >= 2000 || BATCHES < 30, `only ${frames} frames`);
      assert.deepEqual(ParentConn.uncaught, [], "uncaught exceptions in this process");
    });
  });
});
