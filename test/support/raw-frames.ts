/**
 * The framed protocol at the byte level, written independently of src/protocol so that tests
 * do not check the codec with itself: raw frames out, response texts and their exact id tokens
 * in, and a relay subcommand driven over real pipes.
 */

import { Buffer } from "node:buffer";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import type { ChildExit } from "../../src/protocol/child-io.ts";
import { relayArgv } from "./self.ts";

/** A 4-byte big-endian length header saying `n`. */
export function header(n: number): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(n, 0);
  return h;
}

/** A frame around `payload`, whatever it holds (empty, invalid UTF-8, not JSON). */
export function rawFrame(payload: string | Uint8Array): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
  return Buffer.concat([header(body.length), body]);
}

export interface RawMessage {
  text: string;
  /** JSON.parse of the text (ids above 2^53-1 are rounded here: use `id`). */
  value: {
    type?: string;
    method?: string;
    params?: unknown;
    result?: { ok?: unknown; error?: { code: string; message: string } };
  };
  /** The exact top-level id token, read from the text. */
  id: string | undefined;
  bytes: number;
}

/** Relay writes `{"type":...,"id":N,...}`: the id token follows the type. */
export function idToken(text: string): string | undefined {
  return /^\{"type":"[a-z]+","id":([0-9]+)[,}]/.exec(text)?.[1];
}

/** Splits a byte stream into frames; throws on anything that is not a frame of JSON (relay must never write that). */
export class RawReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): RawMessage[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: RawMessage[] = [];
    while (this.buf.length >= 4) {
      const n = this.buf.readUInt32BE(0);
      if (this.buf.length < 4 + n) break;
      const text = new TextDecoder("utf-8", { fatal: true }).decode(this.buf.subarray(4, 4 + n));
      this.buf = this.buf.subarray(4 + n);
      out.push({ text, value: JSON.parse(text) as RawMessage["value"], id: idToken(text), bytes: n });
    }
    return out;
  }

  get pending(): number {
    return this.buf.length;
  }
}

/** A relay subcommand on real pipes, spoken to in raw bytes. */
export class RawChild {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<ChildExit>;
  /** Every frame the child wrote, in order. */
  readonly messages: RawMessage[] = [];
  stderr = "";
  /** Set once stdout has closed: no frame can come any more. */
  outputClosed = false;
  private readonly reader = new RawReader();
  private readonly listeners = new Set<() => void>();
  private readError: Error | undefined;

  constructor(args: string[], env: NodeJS.ProcessEnv = process.env) {
    const [cmd, ...pre] = relayArgv();
    this.child = spawn(cmd!, [...pre, ...args], { stdio: ["pipe", "pipe", "pipe"], env });
    this.child.stdout.on("data", (chunk: Buffer) => {
      try {
        this.messages.push(...this.reader.push(chunk));
      } catch (e) {
        this.readError = e as Error;
      }
      this.wake();
    });
    this.child.stdout.once("close", () => {
      this.outputClosed = true;
      this.wake();
    });
    this.child.stderr.setEncoding("utf8").on("data", (d: string) => (this.stderr += d));
    // EPIPE after the child exited on a fatal frame: its exit says why.
    this.child.stdin.on("error", () => {});
    this.exited = new Promise((resolve) => this.child.once("close", (code, signal) => resolve({ code, signal })));
  }

  /** Resolves once the bytes are in the pipe (or the pipe broke: the exit tells why). */
  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.stdin.destroyed || this.child.stdin.writableEnded) return resolve();
      this.child.stdin.write(bytes, () => resolve());
    });
  }

  end(): void {
    this.child.stdin.end();
  }

  /** Resolves once `cond` holds, looking again after every frame; false if stdout closed first. */
  when(cond: () => boolean): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.readError) {
          this.listeners.delete(check);
          return reject(new Error(`the child wrote something that is not a frame of JSON: ${this.readError.message}`));
        }
        if (cond()) return done(true);
        if (this.outputClosed) done(false);
      };
      const done = (v: boolean) => {
        this.listeners.delete(check);
        resolve(v);
      };
      this.listeners.add(check);
      check();
    });
  }

  /** The first response with id token `id`, waiting for it; undefined if stdout closed first. */
  async response(id: string): Promise<RawMessage | undefined> {
    const find = () => this.messages.find((m) => m.value.type === "response" && m.id === id);
    await this.when(() => find() !== undefined);
    return find();
  }

  private wake(): void {
    for (const l of [...this.listeners]) l();
  }
}

/** A request frame as relay would write it (ids as exact tokens, so above 2^53-1 too). */
export function requestFrame(id: string | number, method: string, params: unknown = {}): Buffer {
  return rawFrame(
    `{"type":"request","id":${id},"method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`,
  );
}
