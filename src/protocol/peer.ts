/**
 * A symmetric RPC peer over any byte stream pair: either side may send requests and
 * notifications. Every request is answered with a Result value; nothing is thrown across the
 * wire. When the peer goes away, every pending call resolves with a `peer_closed` error.
 *
 * Bad input, and what happens to it (never an exception out of the stream handlers):
 * - Fatal, the connection closes with the reason (a stdio server prints it as one line and
 *   exits 1): a header announcing more than the frame limit, a stream that ends inside a frame.
 * - Not fatal, the frame is dropped and the peer goes on: a payload that is empty, not UTF-8,
 *   not JSON, nested deeper than MAX_NESTING (1000), or JSON that is not a valid message. If
 *   its top-level "type" and "id" can still be read (contracts/wire-id.ts scans the raw text, so this
 *   works for broken JSON too), a "request" is answered with an `invalid_message` error and a
 *   "response" to one of our pending calls settles that call with an `invalid_message` error.
 *   Anything else goes to `onProtocolError`, one line per frame.
 * - A request that reuses the id of a request still being handled is answered `duplicate_id`
 *   and not run.
 * - Ids are u64: one above 2^53-1 is read exactly from the raw text and answered with the same
 *   token; an id that is not an integer in [0, 2^64) makes the message invalid.
 * - Every answer fits the frame limit (response.ts): an ok value too large becomes a
 *   `frame_too_large` error, one that cannot be encoded an `internal` error, and an error
 *   message too large is cut with a "…[truncated N bytes]" marker.
 */
import { z } from "zod";
import { type Envelope, EnvelopeSchema, ErrorCode, type PeerErrorCode, type RequestId } from "../contracts/envelope.ts";
import type { MethodSpec, NotificationSpec } from "../contracts/method.ts";
import { idFromToken, restoreExactId, scanEnvelopeHead } from "../contracts/wire-id.ts";
import { type ErrorValue, err, type Failure, ok, type Result } from "../util/result.ts";
import type { ByteSink, ByteSource } from "./byte-stream.ts";
import { CorkedOutput } from "./corked-output.ts";
import { checkEnvelope, isRequestId } from "./envelope-guard.ts";
import { DEFAULT_FRAME_LIMIT, type DecodedFrame, encodeFrame, FrameDecoder } from "./frame.ts";
import { HandlerTable } from "./handler-table.ts";
import { type CallOptions, PendingCalls } from "./pending-calls.ts";
import { responseFrame } from "./response.ts";

export type { CallOptions } from "./pending-calls.ts";

/** A protocol error line longer than this is cut (a frame can hold 16 MiB of bad keys). */
const MAX_REPORT_CHARS = 2000;

export interface HandlerContext {
  /** Aborted when the caller cancels the request or the peer closes. */
  readonly signal: AbortSignal;
  readonly requestId: RequestId;
  readonly peer: RpcPeer;
  /**
   * Answers the request now, before the handler returns (whose value is then ignored): a handler
   * that goes on working synchronously can let its caller know it has started. Honours cork().
   */
  respond(result: Result<unknown>): void;
}

export interface PeerOptions {
  /** Shown in error messages, e.g. "executor". */
  name?: string;
  frameLimit?: number;
  /** Called, with one line, for bad input that cannot be answered (see the header comment). */
  onProtocolError?: (message: string) => void;
  /** Extra words for the close reason when the input ends, e.g. a child's exit status. */
  describeEnd?: () => Promise<string> | string;
  /**
   * A server: at a clean end of input, the requests already received are answered before the
   * connection closes (a parent may close stdin right after its last request).
   */
  answerBeforeEnd?: boolean;
  /**
   * With answerBeforeEnd: whether the other side is gone for good (a stdio server's parent that
   * died), so nobody will read the answers still being worked on: then the connection closes
   * at once and its handlers are aborted, instead of running on (a command's whole yield time).
   */
  clientGone?: () => boolean;
}

/**
 * The peer joins its parts: our calls awaiting answers (pending-calls.ts), what we serve
 * (handler-table.ts) and our corked output (corked-output.ts); it reads frames, dispatches
 * them, and closes the connection.
 */
/** How often a server answering its last requests looks whether its client is still there. */
const CLIENT_GONE_POLL_MS = 200;

export class RpcPeer {
  readonly name: string;
  readonly frameLimit: number;
  private readonly out: CorkedOutput;
  private readonly pending: PendingCalls;
  private readonly served: HandlerTable<HandlerContext>;
  private readonly decoder: FrameDecoder;
  private closedReason: string | undefined;
  /** Set once the connection is ending (EOF, a failed read or write) while its reason is completed. */
  private endingReason: string | undefined;
  private closedOnError = false;
  /** The input ended cleanly and the requests received are being answered (answerBeforeEnd). */
  private answeringLast = false;
  private readonly closedPromise: Promise<string>;
  private resolveClosed!: (reason: string) => void;

  constructor(
    input: ByteSource,
    output: ByteSink,
    private readonly options: PeerOptions = {},
  ) {
    this.name = options.name ?? "peer";
    this.frameLimit = options.frameLimit ?? DEFAULT_FRAME_LIMIT;
    this.decoder = new FrameDecoder(this.frameLimit);
    // A write that fails (the other side is gone) ends the connection as EOF does, so that the
    // reason carries the other side's exit status and last stderr.
    this.out = new CorkedOutput(output, (message) => void this.onEnd(`writing to it failed: ${message}`, true));
    this.pending = new PendingCalls(this.name, (id) => {
      if (this.closedReason === undefined) this.send({ type: "cancel", id });
    });
    this.served = new HandlerTable(this.name, (message) => this.protocolError(message));
    this.closedPromise = new Promise((r) => (this.resolveClosed = r));
    input.on("data", (chunk: Uint8Array) => this.onData(chunk));
    input.on("end", () => void this.onEnd("its output stream ended"));
    input.on("error", (e: Error) => void this.onEnd(`its output stream failed: ${e.message}`, true));
    // A write error usually means the other side is gone: end through the same path as EOF so
    // the reason carries its exit status and last stderr.
    output.on("error", (e: Error) => void this.onEnd(`writing to it failed: ${e.message}`, true));
  }

  /** Resolves with the reason once the connection is closed. */
  get closed(): Promise<string> {
    return this.closedPromise;
  }

  get isClosed(): boolean {
    return this.closedReason !== undefined;
  }

  /** True when the connection ended because of a protocol or I/O error rather than EOF or close(). */
  get failed(): boolean {
    return this.closedOnError;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Serves `spec`: `fn` may fail only with the method's declared codes or the peer's own. */
  handle<P extends z.ZodType, R extends z.ZodType, E extends string>(
    spec: MethodSpec<P, R, E>,
    fn: (
      params: z.output<P>,
      ctx: HandlerContext,
    ) => Promise<Result<z.input<R>, NoInfer<E> | PeerErrorCode>> | Result<z.input<R>, NoInfer<E> | PeerErrorCode>,
  ): this {
    this.served.handle(
      spec,
      fn as (params: unknown, ctx: HandlerContext) => Promise<Result<unknown>> | Result<unknown>,
    );
    return this;
  }

  onNotification<P extends z.ZodType>(spec: NotificationSpec<P>, fn: (params: z.output<P>) => void): this {
    this.served.onNotification(spec, fn as (params: unknown) => void);
    return this;
  }

  /** Calls `spec`: a failure carries one of its declared codes or one of the peer's own. */
  call<P extends z.ZodType, R extends z.ZodType, E extends string>(
    spec: MethodSpec<P, R, E>,
    params: z.input<P>,
    options: CallOptions = {},
  ): Promise<Result<z.output<R>, E | PeerErrorCode>> {
    if (this.closedReason !== undefined || this.answeringLast) return Promise.resolve(this.closedError(spec.name));
    if (options.signal?.aborted)
      return Promise.resolve(err(ErrorCode.Cancelled, `${spec.name} was cancelled before it was sent`));
    const answer = this.pending.open(spec.name, spec.result, options, (id) => {
      const sent = this.send({ type: "request", id, method: spec.name, params });
      // Unsent because the connection is ending: the call is settled when it closes, with the reason.
      return "error" in sent && this.endingReason !== undefined ? ok(null) : sent;
    });
    return answer as Promise<Result<z.output<R>, E | PeerErrorCode>>;
  }

  notify<P extends z.ZodType>(spec: NotificationSpec<P>, params: z.input<P>): Result<null> {
    if (this.closedReason !== undefined) return this.closedError(spec.name);
    return this.send({ type: "notification", method: spec.name, params });
  }

  /**
   * Holds outgoing frames until the matching uncork(), then writes them as one chunk: the other
   * side wakes once for several messages (e.g. a response and the notification that follows it
   * in the same turn). Nests; flush() writes what is held without ending the cork.
   */
  cork(): void {
    this.out.cork();
  }

  /** True between cork() and the matching uncork(). */
  get corked(): boolean {
    return this.out.corked;
  }

  uncork(): void {
    this.out.uncork();
  }

  /** Writes the frames held by cork() now (a long synchronous task must not delay them). */
  flush(): void {
    this.out.flush();
  }

  /** Stops the connection: ends our output and fails every pending call. */
  close(reason = "closed by this side", isError = false): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    this.closedOnError = isError;
    // What was held is still written: e.g. the last answers before a deliberate close.
    this.out.uncorkAll();
    this.pending.settleAll((method) => this.closedError(method));
    this.served.abortAll();
    this.out.end();
    this.resolveClosed(reason);
  }

  private closedError(method: string): Failure<typeof ErrorCode.PeerClosed> {
    return err(
      ErrorCode.PeerClosed,
      `${method} failed: ${this.name} closed the connection (${this.closedReason ?? this.endingReason ?? "unknown reason"})`,
    );
  }

  private send(envelope: Envelope): Result<null> {
    const frame = encodeFrame(envelope, this.frameLimit);
    if ("error" in frame) return frame;
    if (!this.out.emit(frame.ok)) return this.closedError("method" in envelope ? envelope.method : envelope.type);
    return ok(null);
  }

  private onData(chunk: Uint8Array): void {
    let frames: DecodedFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (e) {
      // A decoder bug must not escape the stream's data handler as an uncaught exception.
      frames = [
        {
          kind: "fatal",
          code: ErrorCode.Internal,
          message: `reading frames failed: ${(e as Error)?.message ?? String(e)}`,
        },
      ];
    }
    for (const f of frames) {
      if (this.closedReason !== undefined) return;
      if (f.kind === "fatal") {
        // The close reason carries the message: a stdio server prints it once, as it exits.
        this.close(`protocol error: ${f.message}`, true);
        return;
      }
      try {
        if (f.kind === "invalid_json") this.onUnreadable(f.text, `skipped a ${f.bytes}-byte frame: ${f.message}`);
        else this.dispatch(f.value, f.text);
      } catch (e) {
        this.protocolError(
          `skipped a ${f.bytes}-byte frame that could not be handled: ${(e as Error)?.message ?? String(e)}`,
        );
      }
    }
  }

  private async onEnd(what: string, isError = false): Promise<void> {
    if (this.closedReason !== undefined || this.endingReason !== undefined) return;
    this.endingReason = what;
    const tail = this.decoder.finish();
    let reason = what;
    if (tail && tail.kind !== "frame") {
      reason += `; ${tail.message}`;
      isError = true;
    }
    if (this.options.describeEnd) {
      const extra = await this.options.describeEnd();
      if (extra) reason += `; ${extra}`;
    }
    if (!isError && this.options.answerBeforeEnd) {
      // Our own calls can no longer be answered: they fail now, so no handler waits on them.
      this.answeringLast = true;
      this.pending.settleAll((method) => this.closedError(method));
      await this.idleUnlessClientGone();
    }
    this.close(reason, isError);
  }

  /** Waits for the running handlers to answer, or until the client is found gone (looked at every 200 ms). */
  private async idleUnlessClientGone(): Promise<void> {
    const gone = this.options.clientGone;
    if (!gone) return this.served.idle();
    let timer: ReturnType<typeof setInterval> | undefined;
    const clientLeft = new Promise<void>((resolve) => {
      timer = setInterval(() => gone() && resolve(), CLIENT_GONE_POLL_MS);
    });
    try {
      await Promise.race([this.served.idle(), clientLeft]);
    } finally {
      clearInterval(timer);
    }
  }

  private protocolError(message: string): void {
    const line = oneLine(message);
    const cut =
      line.length > MAX_REPORT_CHARS
        ? `${line.slice(0, MAX_REPORT_CHARS)}…[${line.length - MAX_REPORT_CHARS} more characters]`
        : line;
    this.options.onProtocolError?.(`${this.name}: ${cut}`);
  }

  /** A payload that is not JSON: its head may still name a request to answer or a call to settle. */
  private onUnreadable(text: string, problem: string): void {
    const head = scanEnvelopeHead(text);
    const id = head.idToken === undefined ? undefined : idFromToken(head.idToken);
    this.onMalformed(head.type, id, problem);
  }

  /** A frame that is not a valid message: answered, settles our call, or is reported (header comment). */
  private onMalformed(type: unknown, id: RequestId | undefined, problem: string): void {
    if (id !== undefined && type === "request")
      return this.answer(id, err(ErrorCode.InvalidMessage, problem), "a malformed request");
    if (id !== undefined && type === "response" && this.pending.answeredMalformed(id, problem)) return;
    this.protocolError(problem);
  }

  /**
   * The schema's verdict on a value the envelope check refused: what is wrong with it, reported
   * (undefined), or (were the two ever to disagree) the envelope after all.
   */
  private viaSchema(value: unknown): Envelope | undefined {
    const parsed = EnvelopeSchema.safeParse(value);
    if (parsed.success) return parsed.data;
    const v: { type?: unknown; id?: unknown } = value !== null && typeof value === "object" ? value : {};
    this.onMalformed(
      v.type,
      isRequestId(v.id) ? v.id : undefined,
      `not a valid message: ${oneLine(z.prettifyError(parsed.error))}`,
    );
    return undefined;
  }

  private dispatch(value: unknown, text: string): void {
    restoreExactId(value, text);
    const env = checkEnvelope(value) ?? this.viaSchema(value);
    if (env === undefined) return;
    switch (env.type) {
      case "request":
        void this.served.serve(
          env,
          (signal, respond) => ({ signal, requestId: env.id, peer: this, respond }),
          (id, r, method) => this.answer(id, r, method),
        );
        return;
      case "response":
        return this.pending.answered(env.id, env.result as { ok: unknown } | { error: ErrorValue });
      case "notification":
        return this.served.notified(env);
      case "cancel":
        return this.served.cancel(env.id);
    }
  }

  /** Answers request `id`, always with a frame that fits the limit (response.ts). */
  private answer(id: RequestId, result: Result<unknown>, method: string): void {
    if (this.closedReason !== undefined) return;
    const frame = responseFrame(id, result, method, this.frameLimit);
    if ("error" in frame)
      return this.protocolError(`could not answer request ${id} (${method}): ${frame.error.message}`);
    this.out.emit(frame.ok);
  }
}

/** zod's pretty errors span lines; a report is one line per frame. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ");
}
