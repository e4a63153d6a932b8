/**
 * A real HTTP server on 127.0.0.1 that plays an OpenAI-compatible model for tests. It speaks
 * both `/v1/responses` (Responses SSE events) and `/v1/chat/completions` (chunk SSE); the same
 * queued reply renders in whichever format the request path asks for.
 *
 *   await using server = await startFakeModelServer();
 *   server.enqueue(reply().text("hi").toolCall("exec_command", { cmd: "ls" }).usage({ input: 10, output: 5 }));
 *   // point a client at server.baseUrl, then assert on server.requests
 */

import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

// deno-lint-ignore no-explicit-any
export type JsonObject = { [key: string]: any };

export interface RecordedRequest {
  method: string;
  /** Path without the query, e.g. `/v1/responses`. */
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body (or `{}` when the body was not JSON; see `rawBody`). */
  body: JsonObject;
  rawBody: string;
  /** performance.now() when the request's headers arrived (benchmarks time the client's gaps). */
  receivedAtMs: number;
  /** performance.now() when a streamed reply's last byte was written, if it was. */
  repliedAtMs?: number;
}

export interface FakeUsage {
  input: number;
  output: number;
  cached?: number;
  reasoning?: number;
}

export interface StreamError {
  code: string;
  message: string;
  type?: string;
}

/** How chat tool-call deltas are cut up, to imitate different servers. */
export type ChatToolCallStyle =
  /** OpenAI: first fragment has index, id, name; later ones only index and argument pieces. */
  | "fragments"
  /** One chunk per call with everything in it. */
  | "whole"
  /** Like `fragments` but without `index` (some local servers). */
  | "no-index"
  /** Parallel calls' fragments interleaved round-robin, by index. */
  | "interleaved";

type Step =
  | { kind: "reasoning"; text: string; encrypted?: string }
  | { kind: "text"; text: string; newItem?: boolean }
  | { kind: "tool"; name: string; arguments: string; callId: string }
  | { kind: "custom"; name: string; input: string; callId: string };

let idCounter = 0;
const nextId = (prefix: string) => `${prefix}_fake${String(++idCounter).padStart(4, "0")}`;

/** A successful streamed reply, built step by step. */
export class ReplyBuilder {
  readonly kind = "stream";
  readonly steps: Step[] = [];
  usageValue: FakeUsage | undefined;
  dropAfterEvents: number | undefined;
  hangAfterEvents: number | undefined;
  failure: { error: StreamError; as: "failed" | "error" } | undefined;
  chatToolCalls: ChatToolCallStyle = "fragments";
  chatReasoningField: "reasoning_content" | "reasoning" = "reasoning_content";
  omitDone = false;

  text(text: string): this {
    this.steps.push({ kind: "text", text });
    return this;
  }

  /** Text that starts a message item of its own (a commentary item, then an answer item). */
  message(text: string): this {
    this.steps.push({ kind: "text", text, newItem: true });
    return this;
  }

  reasoning(text: string, encryptedContent?: string): this {
    this.steps.push(
      encryptedContent === undefined
        ? { kind: "reasoning", text }
        : { kind: "reasoning", text, encrypted: encryptedContent },
    );
    return this;
  }

  toolCall(name: string, args: Record<string, unknown> | string, opts: { callId?: string } = {}): this {
    this.steps.push({
      kind: "tool",
      name,
      arguments: typeof args === "string" ? args : JSON.stringify(args),
      callId: opts.callId ?? nextId("call"),
    });
    return this;
  }

  customToolCall(name: string, input: string, opts: { callId?: string } = {}): this {
    this.steps.push({ kind: "custom", name, input, callId: opts.callId ?? nextId("call") });
    return this;
  }

  usage(u: FakeUsage): this {
    this.usageValue = u;
    return this;
  }

  /** Destroys the connection after `n` SSE events (0: right after the headers). */
  dropAfter(n: number): this {
    this.dropAfterEvents = n;
    return this;
  }

  /** Sends `n` SSE events, then neither writes nor ends until the client goes away. */
  hangAfter(n: number): this {
    this.hangAfterEvents = n;
    return this;
  }

  /** Ends with an error instead of the terminal event (`response.failed` or an `error` event). */
  failWith(error: StreamError, as: "failed" | "error" = "failed"): this {
    this.failure = { error, as };
    return this;
  }

  chatStyle(opts: {
    toolCalls?: ChatToolCallStyle;
    reasoningField?: "reasoning_content" | "reasoning";
    omitDone?: boolean;
  }): this {
    if (opts.toolCalls) this.chatToolCalls = opts.toolCalls;
    if (opts.reasoningField) this.chatReasoningField = opts.reasoningField;
    if (opts.omitDone !== undefined) this.omitDone = opts.omitDone;
    return this;
  }
}

export interface HttpErrorReply {
  kind: "http_error";
  status: number;
  body: string;
  headers: Record<string, string>;
}
export interface HangReply {
  kind: "hang";
}
export interface RawReply {
  kind: "raw";
  status: number;
  headers: Record<string, string>;
  /** Written one by one, so a test controls where chunks split. */
  chunks: string[];
}
export interface LaterReply {
  kind: "later";
  reply: Promise<Reply>;
}
export type Reply = ReplyBuilder | HttpErrorReply | HangReply | RawReply | LaterReply;

export function reply(): ReplyBuilder {
  return new ReplyBuilder();
}

export function httpError(status: number, body: unknown, headers: Record<string, string> = {}): HttpErrorReply {
  return { kind: "http_error", status, body: typeof body === "string" ? body : JSON.stringify(body), headers };
}

/** Never answers; the request stays open until the client aborts or the server closes. */
export function hang(): HangReply {
  return { kind: "hang" };
}

/** Held open (it counts in `holding`) until `reply` resolves, then answered with it: the test decides when. */
export function later(reply: Promise<Reply>): LaterReply {
  return { kind: "later", reply };
}

/** A 200 with exactly these body chunks (for framing edge cases). */
export function raw(chunks: string | string[], opts: { status?: number; contentType?: string } = {}): RawReply {
  return {
    kind: "raw",
    status: opts.status ?? 200,
    headers: { "content-type": opts.contentType ?? "text/event-stream" },
    chunks: typeof chunks === "string" ? [chunks] : chunks,
  };
}

/** Some text deltas, then a server error in the stream. */
export function errorMidStream(
  opts: { text?: string; code?: string; message?: string; as?: "failed" | "error" } = {},
): ReplyBuilder {
  return reply()
    .text(opts.text ?? "Partial answer before the failure")
    .failWith(
      {
        code: opts.code ?? "server_error",
        message: opts.message ?? "The server had an error while processing your request.",
      },
      opts.as ?? "failed",
    );
}

/** Headers, then (after `afterEvents` SSE events) a destroyed socket. */
export function dropConnection(
  afterEvents = 0,
  base: ReplyBuilder = reply().text("This text is cut off"),
): ReplyBuilder {
  return base.dropAfter(afterEvents);
}

export const CONTEXT_WINDOW_MESSAGE =
  "Your input exceeds the context window of this model. Please adjust your input and try again.";

export function contextWindowExceeded(opts: { inStream?: boolean } = {}): Reply {
  if (opts.inStream) return reply().failWith({ code: "context_length_exceeded", message: CONTEXT_WINDOW_MESSAGE });
  return httpError(400, {
    error: {
      message: CONTEXT_WINDOW_MESSAGE,
      type: "invalid_request_error",
      param: "input",
      code: "context_length_exceeded",
    },
  });
}

export function rateLimited(retryAfterSeconds?: number): HttpErrorReply {
  const headers: Record<string, string> =
    retryAfterSeconds === undefined ? {} : { "retry-after": String(retryAfterSeconds) };
  return httpError(
    429,
    {
      error: {
        message: "Rate limit reached for requests. Please try again later.",
        type: "requests",
        param: null,
        code: "rate_limit_exceeded",
      },
    },
    headers,
  );
}

// ---------------------------------------------------------------------------------------------
// Rendering

/** Word-sized pieces of a text (each keeps its trailing whitespace). */
function pieces(text: string): string[] {
  const out = text.match(/\S+\s*|\s+/g);
  return out && out.length > 0 ? out : [text];
}

function slices(text: string, size: number): string[] {
  if (text === "") return [""];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

type Group = { kind: "message"; texts: string[] } | Exclude<Step, { kind: "text" }>;

/** Consecutive text steps form one assistant message. */
function groups(steps: Step[]): Group[] {
  const out: Group[] = [];
  for (const s of steps) {
    const last = out.at(-1);
    if (s.kind === "text") {
      if (last?.kind === "message" && !s.newItem) last.texts.push(s.text);
      else out.push({ kind: "message", texts: [s.text] });
    } else out.push(s);
  }
  return out;
}

function defaultUsage(r: ReplyBuilder, rawBody: string): FakeUsage {
  const outChars = r.steps.reduce(
    (n, s) => n + (s.kind === "tool" ? s.arguments.length : s.kind === "custom" ? s.input.length : s.text.length),
    0,
  );
  return { input: Math.ceil(rawBody.length / 4), output: Math.ceil(outChars / 4) };
}

const sse = (data: unknown, event?: string) =>
  `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

function renderResponses(r: ReplyBuilder, req: RecordedRequest): string[] {
  const events: string[] = [];
  let seq = 0;
  const emit = (type: string, fields: JsonObject) =>
    events.push(sse({ type, sequence_number: seq++, ...fields }, type));
  const responseId = nextId("resp");
  const base = {
    id: responseId,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model: req.body.model ?? "fake-model",
    parallel_tool_calls: req.body.parallel_tool_calls ?? true,
    store: req.body.store ?? false,
    error: null,
    incomplete_details: null,
  };
  emit("response.created", { response: { ...base, status: "in_progress", output: [], usage: null } });
  emit("response.in_progress", { response: { ...base, status: "in_progress", output: [], usage: null } });
  const output: JsonObject[] = [];
  for (const g of groups(r.steps)) {
    const output_index = output.length;
    if (g.kind === "message") {
      const id = nextId("msg");
      const text = g.texts.join("");
      emit("response.output_item.added", {
        output_index,
        item: { id, type: "message", status: "in_progress", role: "assistant", content: [] },
      });
      emit("response.content_part.added", {
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      });
      for (const t of g.texts)
        for (const delta of pieces(t))
          emit("response.output_text.delta", { item_id: id, output_index, content_index: 0, delta, logprobs: [] });
      emit("response.output_text.done", { item_id: id, output_index, content_index: 0, text, logprobs: [] });
      emit("response.content_part.done", {
        item_id: id,
        output_index,
        content_index: 0,
        part: { type: "output_text", text, annotations: [] },
      });
      const item = {
        id,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text, annotations: [] }],
      };
      emit("response.output_item.done", { output_index, item });
      output.push(item);
    } else if (g.kind === "reasoning") {
      const id = nextId("rs");
      emit("response.output_item.added", { output_index, item: { id, type: "reasoning", summary: [] } });
      emit("response.reasoning_summary_part.added", {
        item_id: id,
        output_index,
        summary_index: 0,
        part: { type: "summary_text", text: "" },
      });
      for (const delta of pieces(g.text))
        emit("response.reasoning_summary_text.delta", { item_id: id, output_index, summary_index: 0, delta });
      emit("response.reasoning_summary_text.done", { item_id: id, output_index, summary_index: 0, text: g.text });
      emit("response.reasoning_summary_part.done", {
        item_id: id,
        output_index,
        summary_index: 0,
        part: { type: "summary_text", text: g.text },
      });
      const item: JsonObject = { id, type: "reasoning", summary: [{ type: "summary_text", text: g.text }] };
      if (g.encrypted !== undefined) item.encrypted_content = g.encrypted;
      emit("response.output_item.done", { output_index, item });
      output.push(item);
    } else if (g.kind === "tool") {
      const id = nextId("fc");
      emit("response.output_item.added", {
        output_index,
        item: { id, type: "function_call", status: "in_progress", arguments: "", call_id: g.callId, name: g.name },
      });
      for (const delta of slices(g.arguments, 8))
        emit("response.function_call_arguments.delta", { item_id: id, output_index, delta });
      emit("response.function_call_arguments.done", { item_id: id, output_index, arguments: g.arguments });
      const item = {
        id,
        type: "function_call",
        status: "completed",
        arguments: g.arguments,
        call_id: g.callId,
        name: g.name,
      };
      emit("response.output_item.done", { output_index, item });
      output.push(item);
    } else {
      const id = nextId("ctc");
      emit("response.output_item.added", {
        output_index,
        item: { id, type: "custom_tool_call", status: "in_progress", call_id: g.callId, input: "", name: g.name },
      });
      for (const delta of slices(g.input, 8))
        emit("response.custom_tool_call_input.delta", { item_id: id, output_index, delta });
      emit("response.custom_tool_call_input.done", { item_id: id, output_index, input: g.input });
      const item = {
        id,
        type: "custom_tool_call",
        status: "completed",
        call_id: g.callId,
        input: g.input,
        name: g.name,
      };
      emit("response.output_item.done", { output_index, item });
      output.push(item);
    }
  }
  if (r.failure) {
    const { code, message, type } = r.failure.error;
    if (r.failure.as === "error") emit("error", { code, message, param: null, ...(type ? { error_type: type } : {}) });
    else
      emit("response.failed", {
        response: { ...base, status: "failed", output, usage: null, error: { code, message } },
      });
    return events;
  }
  const u = r.usageValue ?? defaultUsage(r, req.rawBody);
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: u.input + u.output,
  };
  emit("response.completed", { response: { ...base, status: "completed", output, usage } });
  return events;
}

function renderChat(r: ReplyBuilder, req: RecordedRequest): string[] {
  const events: string[] = [];
  const id = nextId("chatcmpl");
  const created = Math.floor(Date.now() / 1000);
  const model = req.body.model ?? "fake-model";
  const chunk = (choices: JsonObject[], extra: JsonObject = {}) =>
    events.push(
      sse({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_fake", choices, ...extra }),
    );
  const delta = (d: JsonObject, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);

  delta({ role: "assistant", content: "" });
  const calls: { index: number; callId: string; name: string; arguments: string }[] = [];
  for (const s of r.steps) {
    if (s.kind === "reasoning") for (const p of pieces(s.text)) delta({ content: null, [r.chatReasoningField]: p });
    else if (s.kind === "text") for (const p of pieces(s.text)) delta({ content: p });
    else if (s.kind === "tool")
      calls.push({ index: calls.length, callId: s.callId, name: s.name, arguments: s.arguments });
    else
      calls.push({
        index: calls.length,
        callId: s.callId,
        name: s.name,
        arguments: JSON.stringify({ input: s.input }),
      });
  }
  const style = r.chatToolCalls;
  const fragmentsOf = (c: (typeof calls)[number]): JsonObject[] => {
    const withIndex = style !== "no-index";
    const idx = withIndex ? { index: c.index } : {};
    if (style === "whole")
      return [{ ...idx, id: c.callId, type: "function", function: { name: c.name, arguments: c.arguments } }];
    return [
      { ...idx, id: c.callId, type: "function", function: { name: c.name, arguments: "" } },
      ...slices(c.arguments, 7).map((a) => ({ ...idx, function: { arguments: a } })),
    ];
  };
  if (style === "interleaved") {
    const lists = calls.map(fragmentsOf);
    for (let i = 0; lists.some((l) => i < l.length); i++)
      for (const l of lists) if (i < l.length) delta({ tool_calls: [l[i]] });
  } else {
    for (const c of calls) for (const f of fragmentsOf(c)) delta({ tool_calls: [f] });
  }
  if (r.failure) {
    const { code, message, type } = r.failure.error;
    events.push(sse({ error: { message, type: type ?? "server_error", param: null, code } }));
    return events;
  }
  delta({}, calls.length > 0 ? "tool_calls" : "stop");
  if (req.body.stream_options?.include_usage) {
    const u = r.usageValue ?? defaultUsage(r, req.rawBody);
    chunk([], {
      usage: {
        prompt_tokens: u.input,
        completion_tokens: u.output,
        total_tokens: u.input + u.output,
        prompt_tokens_details: { cached_tokens: u.cached ?? 0 },
        completion_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
      },
    });
  }
  if (!r.omitDone) events.push(sse("[DONE]"));
  return events;
}

// ---------------------------------------------------------------------------------------------
// Server

export class FakeModelServer {
  readonly requests: RecordedRequest[] = [];
  private readonly queue: Reply[] = [];
  private readonly routes: Array<{ match: (r: RecordedRequest) => boolean; replies: Reply[] }> = [];
  private readonly refusals: Array<{ match: (r: RecordedRequest) => boolean; error: HttpErrorReply }> = [];
  private readonly sockets = new Set<Socket>();
  private readonly held = new Set<ServerResponse>();
  private holdWaiters: Array<() => void> = [];
  private closed = false;
  /** Answers a request the queues have no reply for (a long benchmark's models, decided per request). */
  responder: ((r: RecordedRequest) => Reply | undefined) | undefined;
  /** false: requests are not kept in `requests` (a benchmark of thousands of requests). */
  recording = true;

  constructor(
    private readonly server: Server,
    readonly port: number,
  ) {
    server.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  /** `http://127.0.0.1:<port>` */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Base URL for clients: `http://127.0.0.1:<port>/v1`. */
  get baseUrl(): string {
    return `${this.origin}/v1`;
  }

  /** Replies are used in order, one per request. */
  enqueue(...replies: Reply[]): this {
    this.queue.push(...replies);
    return this;
  }

  /**
   * Replies for the requests `match` picks, in order, ahead of the main queue: for a client whose
   * requests interleave with another's in no fixed order (a background job beside a session).
   */
  /**
   * Every request that `match`es gets this error, for as long as the server runs (a server
   * that never takes some request feature, e.g. structured output); it uses no queued reply.
   */
  refuse(match: (r: RecordedRequest) => boolean, error: HttpErrorReply): this {
    this.refusals.push({ match, error });
    return this;
  }

  route(match: (r: RecordedRequest) => boolean, ...replies: Reply[]): this {
    this.routes.push({ match, replies });
    return this;
  }

  /** Replies not used yet. */
  get queued(): number {
    return this.queue.length;
  }

  /** Requests that are being held open (`hang()`, `hangAfter()`). */
  get holding(): number {
    return this.held.size;
  }

  /** Resolves once a request is being held open: the client is waiting on a silent server. */
  whenHolding(): Promise<void> {
    if (this.held.size > 0) return Promise.resolve();
    return new Promise((r) => this.holdWaiters.push(r));
  }

  /**
   * Resets the connections of the held requests now. A test that calls this once its client has
   * shown some output knows that output arrived before the drop (a timed drop cannot promise
   * that on a loaded machine: the kernel discards what the client had not read yet).
   */
  dropHeld(): void {
    for (const res of this.held) {
      res.destroy();
      res.socket?.destroy();
    }
    this.held.clear();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedAtMs = performance.now();
    res.on("error", () => {});
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
    const rawBody = Buffer.concat(chunks).toString("utf8");
    let body: JsonObject = {};
    try {
      const parsed: unknown = JSON.parse(rawBody);
      if (parsed && typeof parsed === "object") body = parsed as JsonObject;
    } catch {
      // not JSON; rawBody keeps it
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    const path = new URL(req.url ?? "/", this.origin).pathname;
    const recorded: RecordedRequest = { method: req.method ?? "GET", path, headers, body, rawBody, receivedAtMs };
    if (this.recording) this.requests.push(recorded);

    const api = path.endsWith("/responses") ? "responses" : path.endsWith("/chat/completions") ? "chat" : undefined;
    if (!api) {
      return sendJson(res, 404, {
        error: {
          message: `fake model server: no endpoint ${req.method} ${path}`,
          type: "invalid_request_error",
          param: null,
          code: "unknown_url",
        },
      });
    }
    const refusal = this.refusals.find((f) => f.match(recorded));
    const lane = refusal ? undefined : this.routes.find((l) => l.match(recorded));
    let r = refusal ? refusal.error : lane ? lane.replies.shift() : (this.queue.shift() ?? this.responder?.(recorded));
    while (r?.kind === "later") {
      this.hold(res);
      r = await r.reply;
      this.held.delete(res);
      if (res.destroyed) return;
    }
    if (!r) {
      return sendJson(res, 500, {
        error: {
          message: `fake model server: the test queued no reply for ${req.method} ${path} (request #${this.requests.length})`,
          type: "server_error",
          code: "no_reply_queued",
        },
      });
    }
    switch (r.kind) {
      case "http_error":
        res.writeHead(r.status, { "content-type": "application/json", ...r.headers });
        res.end(r.body);
        return;
      case "hang":
        this.hold(res);
        return;
      case "raw":
        res.writeHead(r.status, r.headers);
        res.flushHeaders();
        for (const c of r.chunks) await write(res, c);
        res.end();
        return;
      case "stream": {
        const events = api === "responses" ? renderResponses(r, recorded) : renderChat(r, recorded);
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
        res.flushHeaders();
        for (let i = 0; i <= events.length; i++) {
          if (r.dropAfterEvents === i) {
            // Give the written bytes a moment to leave before the reset.
            await new Promise((resolve) => setTimeout(resolve, 10));
            res.destroy();
            req.socket?.destroy();
            return;
          }
          if (r.hangAfterEvents === i) {
            this.hold(res);
            return;
          }
          if (i < events.length) await write(res, events[i]!);
        }
        res.end();
        recorded.repliedAtMs = performance.now();
        return;
      }
    }
  }

  private hold(res: ServerResponse): void {
    this.held.add(res);
    res.on("close", () => this.held.delete(res));
    for (const r of this.holdWaiters.splice(0)) r();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const res of this.held) res.destroy();
    this.held.clear();
    const done = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const s = this.server as Server & { closeAllConnections?: () => void };
    s.closeAllConnections?.();
    for (const socket of this.sockets) socket.destroy();
    await done;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function write(res: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    const done = () => {
      res.off("close", done);
      resolve();
    };
    res.on("close", done);
    res.write(chunk, done);
  });
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  let fake: FakeModelServer | undefined;
  const server = createServer((req, res) => {
    fake!.handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("fake model server: no port");
  fake = new FakeModelServer(server, address.port);
  return fake;
}

// ---------------------------------------------------------------------------------------------
// Test helpers

/** Drains a model stream; returns every event, and the error that ended it if any. */
export async function drain<T>(stream: AsyncIterable<T>): Promise<{ events: T[]; error?: unknown }> {
  const events: T[] = [];
  try {
    for await (const ev of stream) events.push(ev);
  } catch (error) {
    return { events, error };
  }
  return { events };
}
