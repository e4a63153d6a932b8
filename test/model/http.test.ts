/** Transport behaviour (retries, errors, aborts), for both wire APIs, over loopback. */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, test } from "node:test";
import { createChatClient } from "../../src/model/chat.ts";
import { type ModelClient, ModelError, type ModelEvent, type ModelRequest } from "../../src/model/client.ts";
import {
  backoffDelay,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  parseServerError,
  type TransportOptions,
} from "../../src/model/http.ts";
import { userMessage } from "../../src/model/items.ts";
import { createResponsesClient } from "../../src/model/responses.ts";
import {
  drain,
  dropConnection,
  type FakeModelServer,
  hang,
  httpError,
  rateLimited,
  reply,
  startFakeModelServer,
} from "../support/fake-model-server.ts";

const REQUEST: ModelRequest = {
  model: "m-test",
  instructions: "",
  input: [userMessage("hi")],
  tools: [],
  parallelToolCalls: false,
};

const APIS = [
  // SSE events sent before the first text delta: created, in_progress, item added, part added
  {
    name: "responses",
    make: (o: TransportOptions) => createResponsesClient(o),
    eventsBeforeText: 4,
    path: "responses",
  },
  // the role chunk
  { name: "chat", make: (o: TransportOptions) => createChatClient(o), eventsBeforeText: 1, path: "chat/completions" },
];

function text(events: ModelEvent[]): string {
  return events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("");
}

function retries(events: ModelEvent[]) {
  return events.filter((e): e is Extract<ModelEvent, { type: "retrying" }> => e.type === "retrying");
}

async function expectAbort(p: Promise<{ events: ModelEvent[]; error?: unknown }>): Promise<ModelEvent[]> {
  const { events, error } = await p;
  assert.ok(error instanceof Error, `expected an abort error, got ${String(error)}`);
  assert.equal(error.name, "AbortError");
  return events;
}

for (const api of APIS) {
  const client = (server: FakeModelServer, extra: Partial<TransportOptions> = {}): ModelClient =>
    api.make({
      baseUrl: server.baseUrl,
      model: "m-test",
      apiKey: "sk-test",
      apiKeyEnv: "RELAY_TEST_KEY",
      retry: { baseDelayMs: 1, maxDelayMs: 5 },
      ...extra,
    });

  describe(`transport (${api.name})`, () => {
    test("429 with Retry-After is retried after the server's delay, then succeeds", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(rateLimited(0.05), reply().text("after the wait"));
      const started = Date.now();
      const { events, error } = await drain(client(server).stream(REQUEST));
      assert.equal(error, undefined);
      assert.deepEqual(
        retries(events).map((r) => [r.attempt, r.delayMs]),
        [[1, 50]],
      );
      assert.match(retries(events)[0]!.reason, /Rate limited.*429/);
      assert.ok(Date.now() - started >= 45, "waited for Retry-After");
      assert.equal(text(events), "after the wait");
      assert.equal(server.requests.length, 2);
    });

    test("500s are retried with backoff until success", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(httpError(500, { error: { message: "boom" } }), httpError(503, "overloaded"), reply().text("ok"));
      const { events, error } = await drain(client(server).stream(REQUEST));
      assert.equal(error, undefined);
      assert.deepEqual(
        retries(events).map((r) => r.attempt),
        [1, 2],
      );
      assert.ok(retries(events).every((r) => r.delayMs <= 5));
      assert.equal(events.at(-1)!.type, "completed");
    });

    test("gives up after maxRetries with a server error naming the cause", async () => {
      await using server = await startFakeModelServer();
      // nothing queued: the fake server answers 500 "queued no reply"
      const { events, error } = await drain(
        client(server, { retry: { maxRetries: 2, baseDelayMs: 1 } }).stream(REQUEST),
      );
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "server");
      assert.equal(error.status, 500);
      assert.match(error.message, /queued no reply/);
      assert.match(error.message, /gave up after 2 retries/);
      assert.deepEqual(
        retries(events).map((r) => `${r.attempt}/${r.maxRetries}`),
        ["1/2", "2/2"],
        "each retry says how many may follow",
      );
      assert.equal(server.requests.length, 3);
    });

    test("a stream dropped before any output is retried", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(dropConnection(0), dropConnection(api.eventsBeforeText), reply().text("third time lucky"));
      const { events, error } = await drain(client(server).stream(REQUEST));
      assert.equal(error, undefined);
      assert.equal(retries(events).length, 2);
      assert.equal(text(events), "third time lucky");
      assert.equal(server.requests.length, 3);
    });

    test("a stream dropped after text deltas (no whole item yet) is retried, and the partial text is to be dropped", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        reply()
          .text("partial words that never finish")
          .hangAfter(api.eventsBeforeText + 2),
        reply().text("the whole answer"),
      );
      // The connection drops once the consumer has seen text, whatever the machine's load.
      const events: ModelEvent[] = [];
      for await (const ev of client(server).stream(REQUEST)) {
        events.push(ev);
        if (ev.type === "text_delta" && server.queued === 1) server.dropHeld();
      }
      const retry = retries(events);
      assert.equal(retry.length, 1);
      assert.equal(retry[0]!.discardPartial, true);
      const after = events.slice(events.indexOf(retry[0]!) + 1);
      assert.equal(text(after), "the whole answer", "the retry streams the answer anew");
      assert.ok(
        text(events.slice(0, events.indexOf(retry[0]!))).startsWith("partial"),
        "the dropped attempt had streamed text",
      );
      assert.equal(server.requests.length, 2);
    });

    if (api.name === "responses") {
      test("a stream dropped after a whole item is ModelError('stream'), not retried: that item may have been acted on", async () => {
        await using server = await startFakeModelServer();
        // created, in_progress, item.added, part.added, delta, text.done, part.done, item.done: then silence.
        server.enqueue(
          reply().text("done").toolCall("exec_command", { cmd: "true" }).hangAfter(8),
          reply().text("unused"),
        );
        const events: ModelEvent[] = [];
        let error: unknown;
        try {
          for await (const ev of client(server).stream(REQUEST)) {
            events.push(ev);
            if (ev.type === "item") server.dropHeld();
          }
        } catch (e) {
          error = e;
        }
        assert.ok(
          events.some((e) => e.type === "item"),
          "a whole item arrived",
        );
        assert.ok(error instanceof ModelError, String(error));
        assert.equal(error.code, "stream");
        assert.match(error.message, /after part of the answer had arrived whole, so not retried/);
        assert.equal(retries(events).length, 0);
        assert.equal(server.queued, 1);
      });
    }

    test("a hung request is aborted through the signal, without retries", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(hang());
      const ac = new AbortController();
      void server.whenHolding().then(() => ac.abort());
      // The server never answers: only the abort can end this (else the runner's timeout fails it).
      const events = await expectAbort(drain(client(server).stream(REQUEST, ac.signal)));
      assert.equal(events.length, 0);
      assert.equal(server.requests.length, 1);
    });

    test("abort mid-stream stops reading at once", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        reply()
          .text("first words and then silence")
          .hangAfter(api.eventsBeforeText + 1),
      );
      const ac = new AbortController();
      const stream = client(server).stream(REQUEST, ac.signal);
      const events = await expectAbort(
        drain(
          (async function* () {
            for await (const ev of stream) {
              yield ev;
              if (ev.type === "text_delta") ac.abort();
            }
          })(),
        ),
      );
      assert.equal(events.filter((e) => e.type === "text_delta").length, 1);
    });

    test("abort during a backoff wait ends it", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(rateLimited(30));
      const ac = new AbortController();
      const stream = client(server).stream(REQUEST, ac.signal);
      const events = await expectAbort(
        drain(
          (async function* () {
            for await (const ev of stream) {
              yield ev;
              if (ev.type === "retrying") ac.abort();
            }
          })(),
        ),
      );
      assert.equal(retries(events)[0]!.delayMs, 30_000);
      assert.equal(server.requests.length, 1, "no retry was sent: the abort ended the 30 s wait");
    });

    test("server silence past idleTimeoutMs counts as a dropped stream: retried before output", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(hang(), reply().text("words").hangAfter(api.eventsBeforeText), reply().text("awake now"));
      const { events, error } = await drain(client(server, { idleTimeoutMs: 60 }).stream(REQUEST));
      assert.equal(error, undefined);
      assert.deepEqual(
        retries(events).map((r) => r.reason.replace(/\d+/g, "N")),
        [
          `model request idle for N ms: no response from ${server.baseUrl.replace(/\d+/g, "N")}/${api.path}`,
          `model stream idle for N ms: no data from ${server.baseUrl.replace(/\d+/g, "N")}/${api.path}`,
        ],
      );
      assert.equal(text(events), "awake now");
    });

    test("server silence after text deltas is retried like silence before them", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        reply()
          .text("some words then nothing")
          .hangAfter(api.eventsBeforeText + 1),
        reply().text("second try"),
      );
      const { events, error } = await drain(client(server, { idleTimeoutMs: 60 }).stream(REQUEST));
      assert.equal(error, undefined);
      const [retry] = retries(events);
      assert.match(retry!.reason, /model stream idle for 60 ms: no data from /);
      assert.equal(retry!.discardPartial, true);
      assert.equal(text(events.slice(events.indexOf(retry!) + 1)), "second try");
    });

    test("a slow consumer does not trip the idle timer", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(reply().text("one two"));
      const events: ModelEvent[] = [];
      // Long enough that a loaded machine's own pauses between the server's chunks stay under it
      // (at 30 ms a busy CI host tripped it: a retry, then no reply queued).
      const idleTimeoutMs = 250;
      for await (const ev of client(server, { idleTimeoutMs }).stream(REQUEST)) {
        events.push(ev);
        // Not a wait: this is the slow consumer, busy longer than the idle timeout with each event
        // (an idle timer left running meanwhile would trip); the assertions hold whatever its length.
        await new Promise((r) => setTimeout(r, idleTimeoutMs + 20));
      }
      assert.equal(retries(events).length, 0);
      assert.equal(text(events), "one two");
    });

    test("an already-aborted signal sends nothing", async () => {
      await using server = await startFakeModelServer();
      await expectAbort(drain(client(server).stream(REQUEST, AbortSignal.abort())));
      assert.equal(server.requests.length, 0);
    });

    test("401 is an auth error that says which variable sets the key", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        httpError(401, {
          error: {
            message: "Incorrect API key provided: sk-test.",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        }),
      );
      const { error } = await drain(client(server).stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "auth");
      assert.equal(error.status, 401);
      assert.match(error.message, /Incorrect API key provided/);
      assert.match(error.message, /RELAY_TEST_KEY environment variable/);
      assert.equal(server.requests.length, 1);
    });

    test("404 is model_not_found, naming the model and the base URL", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        httpError(404, {
          error: {
            message: "The model `m-test` does not exist or you do not have access to it.",
            type: "invalid_request_error",
            code: "model_not_found",
          },
        }),
      );
      const { error } = await drain(client(server).stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "model_not_found");
      assert.ok(error.message.includes('"m-test"'));
      assert.ok(error.message.includes(server.baseUrl));
    });

    test("a 400 whose body says the model is missing is model_not_found too", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(httpError(400, { error: 'model "m-test" not found, try pulling it first' }));
      const { error } = await drain(client(server).stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "model_not_found");
      assert.match(error.message, /try pulling it first/);
    });

    test("other 4xx are bad_request with the server's message, not retried", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        httpError(422, {
          error: {
            message: "Invalid value for 'tools[0].name'.",
            type: "invalid_request_error",
            param: "tools[0].name",
            code: "invalid_value",
          },
        }),
      );
      const { error } = await drain(client(server).stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "bad_request");
      assert.match(error.message, /Invalid value for 'tools\[0\]\.name'/);
      assert.equal(server.requests.length, 1);
    });

    test("insufficient_quota 429 is not retried", async () => {
      await using server = await startFakeModelServer();
      server.enqueue(
        httpError(429, {
          error: {
            message: "You exceeded your current quota.",
            type: "insufficient_quota",
            code: "insufficient_quota",
          },
        }),
      );
      const { error } = await drain(client(server).stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "rate_limited");
      assert.match(error.message, /quota/);
      assert.equal(server.requests.length, 1);
    });

    test("an unreachable server is a network error after retries", async () => {
      const probe = createServer();
      await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
      const port = (probe.address() as { port: number }).port;
      await new Promise<void>((r) => probe.close(() => r()));
      const c = api.make({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        model: "m",
        retry: { maxRetries: 1, baseDelayMs: 1 },
      });
      const { events, error } = await drain(c.stream(REQUEST));
      assert.ok(error instanceof ModelError);
      assert.equal(error.code, "network");
      assert.match(error.message, new RegExp(`Cannot reach http://127\\.0\\.0\\.1:${port}/v1`));
      assert.equal(retries(events).length, 1);
    });
  });
}

describe("retry helpers", () => {
  test("backoff doubles from the base, stays under the cap, and jitters within bounds", () => {
    const p = { ...DEFAULT_RETRY_POLICY };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(p, n, () => 0.5)),
      [250, 500, 1000, 2000, 4000, 8000, 8000],
    );
    assert.equal(
      backoffDelay(p, 1, () => 0),
      200,
    );
    assert.equal(
      backoffDelay(p, 1, () => 1),
      300,
    );
    assert.equal(
      backoffDelay(p, 10, () => 1),
      8000,
      "jitter never exceeds the cap",
    );
  });

  test("Retry-After: seconds, decimals, HTTP dates and retry-after-ms", () => {
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "3" })), 3000);
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "0.25" })), 250);
    assert.equal(parseRetryAfter(new Headers({ "retry-after-ms": "120", "retry-after": "9" })), 120);
    const now = Date.parse("2025-01-01T00:00:00Z");
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:02 GMT" }), now), 2000);
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "soon" })), undefined);
    assert.equal(parseRetryAfter(new Headers()), undefined);
  });

  test("server error bodies in their common shapes", () => {
    assert.deepEqual(parseServerError('{"error":{"message":"m","type":"t","code":"c"}}'), {
      message: "m",
      code: "c",
      type: "t",
    });
    assert.deepEqual(parseServerError('{"error":"plain"}'), { message: "plain" });
    assert.deepEqual(parseServerError('{"message":"top","code":429}'), { message: "top", code: "429" });
    assert.deepEqual(parseServerError("Bad Gateway\n"), { message: "Bad Gateway" });
  });
});
