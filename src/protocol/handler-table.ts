/**
 * What a peer serves: request and notification handlers by method, and the other side's
 * requests whose handler is running, by id (to cancel them, and to refuse an id still in use).
 * `serve` runs one request and answers it exactly once; a synchronous handler is answered in
 * the same turn. `Ctx` is what a handler is given besides its params (the peer's HandlerContext).
 */
import { z } from "zod";
import { ErrorCode, type NotificationEnvelope, type RequestEnvelope, type RequestId } from "../contracts/envelope.ts";
import type { MethodSpec, NotificationSpec } from "../contracts/method.ts";
import { fastParse } from "../util/fast-parse.ts";
import { err, type Result } from "../util/result.ts";

const PEER_CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/**
 * `r`, unless it fails with a code `spec` does not declare: then an `internal` error naming the
 * code (kept in `data`), so a caller never sees a code outside the method's closed list. Handlers
 * are typed to make this unreachable; it guards what a cast or an untyped value lets through.
 */
export function withinDeclared(spec: MethodSpec, r: Result<unknown>): Result<unknown> {
  if (!("error" in r) || PEER_CODES.has(r.error.code) || spec.errors.includes(r.error.code)) return r;
  const { code, message } = r.error;
  return err(ErrorCode.Internal, `${spec.name} failed with undeclared error code ${JSON.stringify(code)}: ${message}`, {
    code,
  });
}

type AnyHandler<Ctx> = (params: unknown, ctx: Ctx) => Promise<Result<unknown>> | Result<unknown>;
type AnyNotificationHandler = (params: unknown) => void;

export class HandlerTable<Ctx> {
  private readonly handlers = new Map<string, { spec: MethodSpec; fn: AnyHandler<Ctx> }>();
  private readonly notificationHandlers = new Map<string, { spec: NotificationSpec; fn: AnyNotificationHandler }>();
  /** Requests of the other side whose handler is running, by id. */
  private readonly inflight = new Map<RequestId, AbortController>();
  /** Waiting for `inflight` to empty (idle()). */
  private idleWaiters: Array<() => void> = [];

  constructor(
    /** Our name, for the unknown-method message. */
    private readonly peerName: string,
    /** Reports a notification that could not be handled, with one line. */
    private readonly report: (message: string) => void,
  ) {}

  handle(spec: MethodSpec, fn: AnyHandler<Ctx>): void {
    this.handlers.set(spec.name, { spec, fn });
  }

  onNotification(spec: NotificationSpec, fn: AnyNotificationHandler): void {
    this.notificationHandlers.set(spec.name, { spec, fn });
  }

  /**
   * Runs `req`'s handler with the context `context` builds, and answers it once through
   * `answer`: with the handler's value, its own early `respond`, or the error that kept it from
   * running (a duplicate id, an unknown method, invalid params, a throw).
   */
  async serve(
    req: RequestEnvelope,
    context: (signal: AbortSignal, respond: (r: Result<unknown>) => void) => Ctx,
    answer: (id: RequestId, result: Result<unknown>, method: string) => void,
  ): Promise<void> {
    if (this.inflight.has(req.id)) {
      const message = `request id ${req.id} is already taken by a request still in progress; ${req.method} was not run (ids must be unique among requests in flight)`;
      return answer(req.id, err(ErrorCode.DuplicateId, message), req.method);
    }
    const h = this.handlers.get(req.method);
    let answered = false;
    const respond = (r: Result<unknown>) => {
      if (answered) return;
      answered = true;
      answer(req.id, h ? withinDeclared(h.spec, r) : r, req.method);
    };
    let result: Result<unknown>;
    if (!h) {
      const known = [...this.handlers.keys()].sort().join(", ");
      result = err(
        ErrorCode.MethodNotFound,
        `unknown method ${JSON.stringify(req.method)}; ${this.peerName} supports: ${known || "nothing"}`,
      );
    } else {
      const checked = fastParse(h.spec.params, req.params);
      if (!checked.success) {
        result = err(ErrorCode.InvalidParams, `invalid params for ${req.method}: ${z.prettifyError(checked.error)}`);
      } else {
        const ctrl = new AbortController();
        this.inflight.set(req.id, ctrl);
        try {
          const r = h.fn(checked.data, context(ctrl.signal, respond));
          // A synchronous handler is answered in the same turn (no await, no extra microtask hop).
          result = r instanceof Promise ? await r : r;
        } catch (e) {
          result = err(ErrorCode.Internal, `${req.method} failed: ${(e as Error)?.message ?? String(e)}`);
        } finally {
          this.inflight.delete(req.id);
        }
      }
    }
    respond(result);
    if (this.inflight.size === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Hands a notification to its handler; one nobody handles is dropped, bad params are reported. */
  notified(env: NotificationEnvelope): void {
    const h = this.notificationHandlers.get(env.method);
    if (!h) return;
    const checked = fastParse(h.spec.params, env.params);
    if (!checked.success) return this.report(`bad ${env.method} notification: ${z.prettifyError(checked.error)}`);
    try {
      h.fn(checked.data);
    } catch (e) {
      this.report(`${env.method} notification handler failed: ${(e as Error).message}`);
    }
  }

  /** The other side cancelled request `id`: its handler's signal aborts. */
  cancel(id: RequestId): void {
    this.inflight.get(id)?.abort();
  }

  /** Resolves once no handler is running (each answered). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Aborts every running handler (the connection closed). */
  abortAll(): void {
    for (const ctrl of this.inflight.values()) ctrl.abort();
    this.inflight.clear();
  }
}
