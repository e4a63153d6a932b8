/**
 * Our calls awaiting an answer, by id. Each settles exactly once: with the answer (an ok value
 * is checked against its method's result schema), a cancel, a timeout, a send that failed, a
 * malformed answer, or the peer closing.
 */
import { z } from "zod";
import { ErrorCode, type RequestId } from "../contracts/envelope.ts";
import { fastParse } from "../util/fast-parse.ts";
import { type ErrorValue, err, ok, type Result } from "../util/result.ts";

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

interface Pending {
  resolve(r: Result<unknown>): void;
  result: z.ZodType;
  method: string;
  cleanup(): void;
}

export class PendingCalls {
  private nextId = 1;
  private readonly calls = new Map<number, Pending>();

  constructor(
    /** The other side's name, for messages. */
    private readonly peerName: string,
    /** Tells the other side that call `id` was cancelled or timed out. */
    private readonly sendCancel: (id: number) => void,
  ) {}

  get size(): number {
    return this.calls.size;
  }

  /** Opens a call of `method`; `send` sends its request with the id. Resolves once the call settles. */
  open(
    method: string,
    result: z.ZodType,
    options: CallOptions,
    send: (id: number) => Result<null>,
  ): Promise<Result<unknown>> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => this.cancel(id, err(ErrorCode.Cancelled, `${method} was cancelled`));
      const entry: Pending = {
        resolve,
        result,
        method,
        cleanup: () => {
          if (timer) clearTimeout(timer);
          options.signal?.removeEventListener("abort", onAbort);
        },
      };
      this.calls.set(id, entry);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(
          () =>
            this.cancel(
              id,
              err(ErrorCode.Timeout, `${method} got no answer from ${this.peerName} within ${options.timeoutMs} ms`),
            ),
          options.timeoutMs,
        );
      }
      const sent = send(id);
      if ("error" in sent) this.settle(id, sent);
    });
  }

  private cancel(id: number, result: Result<unknown>): void {
    if (!this.calls.has(id)) return;
    this.settle(id, result);
    this.sendCancel(id);
  }

  private settle(id: number, result: Result<unknown>): void {
    const p = this.calls.get(id);
    if (!p) return;
    this.calls.delete(id);
    p.cleanup();
    p.resolve(result);
  }

  /** A response arrived: settles its call; one that answers nothing of ours (late, or a bigint id) is dropped. */
  answered(id: RequestId, result: { ok: unknown } | { error: ErrorValue }): void {
    // Our ids are numbers; a bigint answers nothing of ours.
    const p = typeof id === "number" ? this.calls.get(id) : undefined;
    if (!p) return; // late answer to a cancelled or timed-out call
    if ("error" in result) return this.settle(id as number, result);
    const checked = fastParse(p.result, result.ok);
    this.settle(
      id as number,
      checked.success
        ? ok(checked.data)
        : err(
            ErrorCode.InvalidResult,
            `${this.peerName} answered ${p.method} with an unexpected result: ${z.prettifyError(checked.error)}`,
          ),
    );
  }

  /** A malformed response named call `id`: settles it with `problem`; false when it names none of ours. */
  answeredMalformed(id: RequestId, problem: string): boolean {
    const p = typeof id === "number" ? this.calls.get(id) : undefined;
    if (!p) return false;
    this.settle(id as number, err(ErrorCode.InvalidMessage, `the response to ${p.method} was malformed: ${problem}`));
    return true;
  }

  /** Settles every call with `errorFor(method)`. */
  settleAll(errorFor: (method: string) => Result<unknown>): void {
    for (const [id, p] of this.calls) this.settle(id, errorFor(p.method));
  }
}
