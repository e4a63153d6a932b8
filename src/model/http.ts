/**
 * Shared HTTP transport of the model clients: POST a JSON body, read the SSE reply, and retry
 * transient failures with exponential backoff. A retry is only possible while the consumer has
 * seen no output; after that a failure surfaces as a ModelError.
 */
import { z } from "zod";
import { sleep, throwIfAborted } from "../process/sleep.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { Log } from "../util/log.ts";
import { ModelError, type ModelEvent } from "./client.ts";
import { preconnectModel } from "./preconnect.ts";
import { parseSse, type SseEvent } from "./sse.ts";

export const RetryPolicySchema = lazySchema(() =>
  z.object({
    maxRetries: z.number().int().min(0),
    baseDelayMs: z.number().min(0),
    factor: z.number().min(1),
    maxDelayMs: z.number().min(0),
    /** Random spread, as a fraction of the delay (0.2 → ±20%). */
    jitter: z.number().min(0).max(1),
    /** Upper bound for a server's `Retry-After`. */
    maxRetryAfterMs: z.number().min(0),
  }),
);
export type RetryPolicy = z.infer<typeof RetryPolicySchema>;
/** Config overrides: any subset of the policy. */
export const RetryOverridesSchema = lazySchema(() => RetryPolicySchema.partial());
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 4,
  baseDelayMs: 250,
  factor: 2,
  maxDelayMs: 8000,
  jitter: 0.2,
  maxRetryAfterMs: 60_000,
});

export interface TransportOptions {
  /** Base URL without the endpoint path, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Where the key comes from, for error messages (e.g. `OPENAI_API_KEY`). */
  apiKeyEnv?: string;
  /** Fail at first use when no key is set (api.openai.com); local servers need none. */
  requireApiKey?: boolean;
  headers?: Record<string, string>;
  retry?: Partial<RetryPolicy>;
  /** Server silence (before headers or between chunks) that counts as a dropped stream. */
  idleTimeoutMs?: number;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/**
 * Thrown by parsers (and the transport) for a failure that may be retried when the consumer
 * has seen no output yet. `error` is what surfaces when it is not retried.
 */
export class RetryableError extends Error {
  override readonly name = "RetryableError";
  constructor(
    readonly error: ModelError,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
}

/** Turns one attempt's SSE events into model events; must throw when the stream ends early. */
export type SseParser = (events: AsyncIterable<SseEvent>) => AsyncIterable<ModelEvent>;

export function endpointUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

const log = Log.create("model");

/** Where a request went, for the log: no credentials a URL might carry, no query. */
function logUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(unparsable url)";
  }
}

/** A request's final failure, logged (code, status and message; never the body or the key). */
function failed(e: ModelError, url: string, attempts: number): ModelError {
  log.warn("request failed", { url: logUrl(url), code: e.code, status: e.status, attempts, message: e.message });
  return e;
}

/** POSTs `body` to `{baseUrl}/{path}` and streams the parsed events, retrying as configured. */
export async function* streamWithRetry(
  opts: TransportOptions,
  path: string,
  body: unknown,
  parse: SseParser,
  signal?: AbortSignal,
): AsyncGenerator<ModelEvent> {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...stripUndefined(opts.retry ?? {}) };
  const url = endpointUrl(opts.baseUrl, path);
  if (opts.requireApiKey && !opts.apiKey) {
    throw failed(
      new ModelError(
        "auth",
        `No API key for ${opts.baseUrl}: set the ${opts.apiKeyEnv ?? "OPENAI_API_KEY"} environment variable.`,
      ),
      url,
      0,
    );
  }
  const request: Attempt = {
    opts,
    url,
    payload: JSON.stringify(body),
    headers: requestHeaders(opts),
    parse,
    idleMs: opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
  };
  // Deltas alone can be taken back (the consumer drops them); a whole item may have been acted on.
  const sent: Sent = { deltas: false, item: false };
  for (let attempt = 0; ; attempt++) {
    throwIfAborted(signal);
    if (log.enabled("debug"))
      log.debug("request", {
        url: logUrl(url),
        model: opts.model,
        attempt: attempt + 1,
        bytes: request.payload.length,
      });
    const failure = yield* attemptStream(request, attempt, sent, signal);
    if (!failure) return;
    const delayMs = retryDelay(failure, policy, attempt, sent, url);
    log.warn("retrying", {
      url: logUrl(url),
      attempt: attempt + 1,
      delay_ms: Math.round(delayMs),
      code: failure.error.code,
      status: failure.error.status,
      reason: failure.error.message,
    });
    yield {
      type: "retrying",
      attempt: attempt + 1,
      maxRetries: policy.maxRetries,
      delayMs,
      reason: failure.error.message,
      ...(sent.deltas ? { discardPartial: true } : {}),
    };
    sent.deltas = false;
    await sleep(delayMs, signal);
  }
}

/** One request as every attempt sends it. */
interface Attempt {
  opts: TransportOptions;
  url: string;
  payload: string;
  headers: Record<string, string>;
  parse: SseParser;
  idleMs: number;
}

/** What the consumer has been given so far: deltas, or a whole item. */
interface Sent {
  deltas: boolean;
  item: boolean;
}

/**
 * Connects to the transport's server ahead of its first request (model/preconnect.ts); not where
 * that request would fail at once for want of a key.
 */
export function preconnectTransport(opts: TransportOptions): void {
  if (opts.requireApiKey && !opts.apiKey) return;
  const r = preconnectModel(opts.baseUrl);
  if (log.enabled("debug"))
    log.debug("preconnect", { url: logUrl(opts.baseUrl), ...(r.started ? { started: true } : { skipped: r.why }) });
}

function requestHeaders(opts: TransportOptions): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "text/event-stream",
    ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
    ...opts.headers,
  };
}

/** One attempt: streams its events, and returns the failure to retry (undefined when it completed). */
async function* attemptStream(
  a: Attempt,
  attempt: number,
  sent: Sent,
  signal?: AbortSignal,
): AsyncGenerator<ModelEvent, RetryableError | undefined> {
  const watch = new AttemptWatch(a.idleMs, signal);
  try {
    let res: Response;
    try {
      watch.arm();
      res = await fetch(a.url, { method: "POST", headers: a.headers, body: a.payload, signal: watch.signal });
      watch.responded = true;
    } catch (e) {
      throwIfAborted(signal);
      if (watch.idle) throw watch.idleError(a.url);
      throw new RetryableError(new ModelError("network", `Cannot reach ${a.url}: ${describeFetchError(e)}`));
    }
    if (!res.ok) throw await httpFailure(res, a.opts, a.url);
    if (!res.body) throw new RetryableError(new ModelError("stream", `The response from ${a.url} has no body`));
    for await (const ev of a.parse(readEvents(res.body, a.url, watch))) {
      if (ev.type === "item" || ev.type === "completed") sent.item = true;
      else if (ev.type !== "retrying") sent.deltas = true;
      watch.disarm(); // the consumer's time is not server silence
      yield ev;
      watch.arm();
    }
    return undefined;
  } catch (thrown) {
    throwIfAborted(signal);
    const e = watch.idle && !(thrown instanceof ModelError) ? watch.idleError(a.url) : thrown;
    if (!(e instanceof RetryableError)) throw e instanceof ModelError ? failed(e, a.url, attempt + 1) : e;
    return e;
  } finally {
    watch.dispose();
  }
}

/** How long to wait before the next attempt; throws the final error when there is none. */
function retryDelay(failure: RetryableError, policy: RetryPolicy, attempt: number, sent: Sent, url: string): number {
  if (sent.item) {
    const code = failure.error.code === "network" ? "stream" : failure.error.code;
    throw failed(
      new ModelError(
        code,
        `${failure.error.message} (after part of the answer had arrived whole, so not retried)`,
        failure.error.status,
      ),
      url,
      attempt + 1,
    );
  }
  if (attempt >= policy.maxRetries) {
    const tries =
      policy.maxRetries === 0
        ? "retries are off"
        : `gave up after ${policy.maxRetries} ${policy.maxRetries === 1 ? "retry" : "retries"}`;
    throw failed(
      new ModelError(failure.error.code, `${failure.error.message} (${tries})`, failure.error.status),
      url,
      attempt + 1,
    );
  }
  return failure.retryAfterMs !== undefined
    ? Math.min(failure.retryAfterMs, policy.maxRetryAfterMs)
    : backoffDelay(policy, attempt + 1);
}

/** One attempt's abort signal: the caller's signal, plus an idle timer on server silence. */
class AttemptWatch {
  private readonly ctl = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  idle = false;
  /** The response headers came: silence from now on is a stalled stream, not an unanswered request. */
  responded = false;
  private readonly onAbort = () => this.ctl.abort(this.outer?.reason);

  constructor(
    private readonly idleMs: number,
    private readonly outer?: AbortSignal,
  ) {
    outer?.addEventListener("abort", this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  arm(): void {
    this.disarm();
    if (this.idleMs <= 0 || !Number.isFinite(this.idleMs)) return;
    this.timer = setTimeout(() => {
      this.idle = true;
      this.ctl.abort(new DOMException("The model server went silent.", "TimeoutError"));
    }, this.idleMs);
  }

  disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  idleError(url: string): RetryableError {
    const what = this.responded
      ? `model stream idle for ${formatMs(this.idleMs)}: no data from ${url}`
      : `model request idle for ${formatMs(this.idleMs)}: no response from ${url}`;
    return new RetryableError(new ModelError("stream", what));
  }

  dispose(): void {
    this.disarm();
    this.outer?.removeEventListener("abort", this.onAbort);
  }
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

/** Delay before retry number `retry` (1-based), with jitter, never above the cap. */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const raw = Math.min(policy.maxDelayMs, policy.baseDelayMs * policy.factor ** (retry - 1));
  const spread = raw * policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.min(policy.maxDelayMs, Math.round(raw + spread)));
}

/** `Retry-After` (seconds, decimals allowed, or an HTTP date) or `retry-after-ms`, in ms. */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "" && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const v = headers.get("retry-after");
  if (v === null || v.trim() === "") return undefined;
  const secs = Number(v);
  if (Number.isFinite(secs)) return Math.max(0, Math.round(secs * 1000));
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Server error bodies: `{error: {message, code, type}}`, `{error: "text"}`, `{message}` or text. */
export interface ServerError {
  message: string;
  code?: string;
  type?: string;
}

const ErrorBodySchema = lazySchema(() =>
  z.union([
    z.object({
      error: z.looseObject({
        message: z.string().nullish(),
        code: z.union([z.string(), z.number()]).nullish(),
        type: z.string().nullish(),
      }),
    }),
    z.object({ error: z.string() }),
    z.looseObject({
      message: z.string(),
      code: z.union([z.string(), z.number()]).nullish(),
      type: z.string().nullish(),
    }),
  ]),
);

export function parseServerError(text: string): ServerError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { message: text.trim().slice(0, 2000) };
  }
  const parsed = ErrorBodySchema.safeParse(json);
  if (!parsed.success) return { message: text.trim().slice(0, 2000) };
  const v = parsed.data;
  if ("error" in v && typeof v.error === "string") return { message: v.error };
  type Fields = { message?: string | null; code?: string | number | null; type?: string | null };
  const e: Fields = "error" in v && typeof v.error === "object" ? (v.error as Fields) : (v as Fields);
  const out: ServerError = { message: e.message ?? text.trim().slice(0, 2000) };
  if (e.code !== null && e.code !== undefined) out.code = String(e.code);
  if (e.type) out.type = e.type;
  return out;
}

const MISSING_MODEL = /model\b.*\b(does not exist|not found|no such)|model_not_found/i;
const CONTEXT_WINDOW =
  /context_length_exceeded|context.length|context window|maximum context|too many tokens|prompt is too long/i;

/** Classifies a non-2xx reply: a RetryableError for 429/5xx, a final ModelError otherwise. */
async function httpFailure(res: Response, opts: TransportOptions, url: string): Promise<RetryableError | ModelError> {
  const text = await res.text().catch(() => "");
  const server = parseServerError(text);
  const detail = server.message || res.statusText || "no error message";
  const status = res.status;
  const codeText = `${server.code ?? ""} ${server.type ?? ""}`;
  if (status === 401 || status === 403) {
    const env = opts.apiKeyEnv ?? "OPENAI_API_KEY";
    const source = opts.apiKey ? `the key in use was rejected` : `no API key was sent`;
    return new ModelError(
      "auth",
      `${opts.baseUrl} refused the request (HTTP ${status}: ${detail}); ${source}. Set a valid API key in the ${env} environment variable, or name the variable that holds it with --api-key-env NAME (config.toml: api_key_env).`,
      status,
    );
  }
  if (status === 404 || MISSING_MODEL.test(codeText) || (status < 500 && MISSING_MODEL.test(server.message))) {
    return new ModelError(
      "model_not_found",
      `Model "${opts.model}" was not found at ${opts.baseUrl} (HTTP ${status}: ${detail}). Check the model name, and that this server serves ${url}.`,
      status,
    );
  }
  if (CONTEXT_WINDOW.test(codeText) || (status === 400 && CONTEXT_WINDOW.test(server.message))) {
    return new ModelError(
      "context_window",
      `The conversation no longer fits the context window of "${opts.model}": ${detail}`,
      status,
    );
  }
  if (status === 429) {
    if (/insufficient_quota/i.test(codeText))
      return new ModelError("rate_limited", `Quota exhausted at ${opts.baseUrl}: ${detail}`, status);
    return new RetryableError(
      new ModelError("rate_limited", `Rate limited by ${opts.baseUrl} (HTTP 429: ${detail})`, status),
      parseRetryAfter(res.headers),
    );
  }
  if (status >= 500) {
    return new RetryableError(
      new ModelError("server", `Server error from ${url} (HTTP ${status}: ${detail})`, status),
      parseRetryAfter(res.headers),
    );
  }
  return new ModelError("bad_request", `${url} rejected the request (HTTP ${status}): ${detail}`, status);
}

/** SSE events of a body; a broken connection becomes a retryable `stream` error. */
async function* readEvents(
  body: ReadableStream<Uint8Array>,
  url: string,
  watch: AttemptWatch,
): AsyncGenerator<SseEvent> {
  try {
    yield* parseSse(body, { signal: watch.signal, onBytes: () => watch.arm() });
  } catch (e) {
    throw new RetryableError(new ModelError("stream", `The stream from ${url} broke: ${describeFetchError(e)}`));
  }
}

/** The error a parser throws when the body ends before its terminal event. */
export function streamEndedEarly(what: string): RetryableError {
  return new RetryableError(new ModelError("stream", `The model stream ended before ${what}`));
}

function describeFetchError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const cause = (e as { cause?: unknown }).cause;
  const causeText = cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "";
  const code = (e as { code?: unknown }).code ?? (cause as { code?: unknown } | undefined)?.code;
  const parts = [
    e.message,
    causeText && causeText !== e.message ? causeText : "",
    typeof code === "string" && !`${e.message} ${causeText}`.includes(code) ? code : "",
  ];
  return parts.filter(Boolean).join(": ");
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Classifies an error the server reported inside a 200 stream (`response.failed`, an `error`
 * event, a chat chunk with `error`): rate limits and server trouble may be retried.
 */
export function inStreamFailure(
  err: ServerError,
  opts: Pick<TransportOptions, "baseUrl" | "model">,
): RetryableError | ModelError {
  const codeText = `${err.code ?? ""} ${err.type ?? ""}`;
  const detail = err.code ? `${err.message} (${err.code})` : err.message;
  if (/insufficient_quota/i.test(codeText))
    return new ModelError("rate_limited", `Quota exhausted at ${opts.baseUrl}: ${detail}`);
  if (/rate_limit|rate-limit|too_many_requests/i.test(codeText)) {
    return new RetryableError(
      new ModelError("rate_limited", `Rate limited by ${opts.baseUrl}: ${detail}`),
      retryHintMs(err.message),
    );
  }
  if (CONTEXT_WINDOW.test(codeText) || CONTEXT_WINDOW.test(err.message)) {
    return new ModelError(
      "context_window",
      `The conversation no longer fits the context window of "${opts.model}": ${detail}`,
    );
  }
  if (/model_not_found/i.test(codeText))
    return new ModelError("model_not_found", `Model "${opts.model}" was not found at ${opts.baseUrl}: ${detail}`);
  if (/invalid_prompt|invalid_request|bad_request/i.test(codeText))
    return new ModelError("bad_request", `The model rejected the request: ${detail}`);
  return new RetryableError(new ModelError("server", `The model failed: ${detail}`));
}

/** "Please try again in 1.5s" / "in 250ms", as servers word it in rate-limit messages. */
function retryHintMs(message: string): number | undefined {
  const m = /try again in (\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(message);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Math.round(m[2]!.toLowerCase() === "ms" ? n : n * 1000);
}
