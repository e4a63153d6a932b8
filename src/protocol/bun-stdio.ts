/**
 * Byte streams through Bun's own file streams: a peer's stdin and stdout, and a child peer's
 * pipes (child.ts). Under Bun, the first touch of `process.stdin` and `process.stdout` builds
 * Node stream objects for them: 5 ms of a relay child's start (executor, code-mode host), 11–14
 * ms in a program that has not loaded node:child_process; `Bun.stdin.stream()` and
 * `Bun.stdout.writer()` cost under one (docs/performance.md), and so do Bun.spawn's pipes against
 * node:child_process's. They are shaped as the parts of a Node stream the peer uses, so the peer
 * itself is the same for Bun, Node and Deno.
 */

import type { BunFileSink } from "../util/bun-spawn.ts";
import type { ByteSink, ByteSource } from "./byte-stream.ts";

type Handlers = { data: Array<(chunk: Uint8Array) => void>; end: Array<() => void>; error: Array<(e: Error) => void> };

interface BunGlobal {
  stdin: { stream(): ReadableStream<Uint8Array> };
  stdout: { writer(): BunFileSink };
}

const bun = () => (globalThis as unknown as { Bun: BunGlobal }).Bun;

const asError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)));

type Handler = Handlers[keyof Handlers][number];

/** A readable stream (stdin by default) as `data`/`end`/`error` events; reading starts once the current task is done, so the peer's handlers are on. */
export class BunStdin implements ByteSource {
  private readonly handlers: Handlers = { data: [], end: [], error: [] };

  constructor(private readonly stream: () => ReadableStream<Uint8Array> = () => bun().stdin.stream()) {
    queueMicrotask(() => void this.pump());
  }

  on(event: keyof Handlers, handler: Handler): this {
    (this.handlers[event] as Handler[]).push(handler);
    return this;
  }

  private async pump(): Promise<void> {
    const reader = this.stream().getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value.length > 0) for (const h of this.handlers.data) h(value);
      }
    } catch (e) {
      for (const h of this.handlers.error) h(asError(e));
      return;
    }
    for (const h of this.handlers.end) h();
  }
}

/**
 * A file sink (stdout's by default) as a sink: each write is flushed at once (a frame must not
 * wait in a buffer); when the pipe is full the rest stays queued in Bun's sink, in order, and
 * `drained()` waits for it.
 */
export class BunStdout implements ByteSink {
  constructor(private readonly sink: BunFileSink = bun().stdout.writer()) {}
  private readonly errorHandlers: Array<(e: Error) => void> = [];
  private pending: Promise<unknown> = Promise.resolve();

  write(bytes: Uint8Array): boolean {
    this.sink.write(bytes);
    this.track(this.sink.flush());
    return true;
  }

  end(): void {
    this.track(this.sink.end());
  }

  on(event: "error", handler: (e: Error) => void): this {
    if (event === "error") this.errorHandlers.push(handler);
    return this;
  }

  /** Resolves once everything written has reached the pipe (or failed). */
  drained(): Promise<void> {
    return this.pending.then(() => undefined);
  }

  /** A pending flush or end: its failure is reported at once (never left unhandled), and `drained()` waits for it. */
  private track(r: number | Promise<number>): void {
    if (!(r instanceof Promise)) return;
    const settled = r.then(
      () => undefined,
      (e: unknown) => {
        for (const h of this.errorHandlers) h(asError(e));
      },
    );
    this.pending = Promise.all([this.pending, settled]);
  }
}
