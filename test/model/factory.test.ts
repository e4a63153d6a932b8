import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ModelError, type ModelRequest } from "../../src/model/client.ts";
import { createModelClient, ModelConfigSchema } from "../../src/model/factory.ts";
import { userMessage } from "../../src/model/items.ts";
import { drain, reply, startFakeModelServer } from "../support/fake-model-server.ts";

const REQUEST: ModelRequest = {
  model: "m",
  instructions: "",
  input: [userMessage("hi")],
  tools: [],
  parallelToolCalls: false,
};

describe("createModelClient", () => {
  test("a missing key for api.openai.com is an auth error at first use, naming OPENAI_API_KEY", async () => {
    const model = createModelClient({ provider: "openai-responses", model: "gpt-5" }, {});
    assert.equal(model.provider, "openai-responses");
    const { error } = await drain(model.stream(REQUEST));
    assert.ok(error instanceof ModelError);
    assert.equal(error.code, "auth");
    assert.match(error.message, /set the OPENAI_API_KEY environment variable/);
    assert.match(error.message, /api\.openai\.com/);
  });

  test("apiKeyEnv names the variable, in the key lookup and the error", async () => {
    const model = createModelClient(
      { provider: "openai-chat", model: "gpt-5", apiKeyEnv: "MY_KEY" },
      { OPENAI_API_KEY: "ignored" },
    );
    const { error } = await drain(model.stream(REQUEST));
    assert.ok(error instanceof ModelError);
    assert.match(error.message, /MY_KEY/);
  });

  test("OPENAI_BASE_URL and the key variable are used; local servers work without a key", async () => {
    await using server = await startFakeModelServer();
    server.enqueue(reply().text("one"), reply().text("two"));
    const withKey = createModelClient(
      { provider: "openai-responses", model: "m", headers: { "x-h": "v" } },
      { OPENAI_BASE_URL: server.baseUrl, OPENAI_API_KEY: "sk-env" },
    );
    assert.equal((await drain(withKey.stream(REQUEST))).error, undefined);
    const noKey = createModelClient({ provider: "openai-chat", model: "m", baseUrl: server.baseUrl }, {});
    assert.equal((await drain(noKey.stream(REQUEST))).error, undefined);
    assert.deepEqual(
      server.requests.map((r) => [r.path, r.headers.authorization, r.headers["x-h"]]),
      [
        ["/v1/responses", "Bearer sk-env", "v"],
        ["/v1/chat/completions", undefined, undefined],
      ],
    );
  });

  test("maxRetries is honoured", async () => {
    await using server = await startFakeModelServer();
    const model = createModelClient(
      { provider: "openai-chat", model: "m", baseUrl: server.baseUrl, maxRetries: 1, retry: { baseDelayMs: 1 } },
      {},
    );
    const { error } = await drain(model.stream(REQUEST));
    assert.ok(error instanceof ModelError);
    assert.equal(server.requests.length, 2);
  });

  test("scripted needs scriptPath; the schema says so", () => {
    const r = ModelConfigSchema.safeParse({ provider: "scripted", model: "demo" });
    assert.equal(r.success, false);
    assert.match(JSON.stringify(r.error?.issues), /scriptPath/);
    assert.equal(
      createModelClient({ provider: "scripted", model: "demo", scriptPath: "/nonexistent.json" }).provider,
      "scripted",
    );
    assert.equal(
      ModelConfigSchema.safeParse({ provider: "openai-chat", model: "m", baseUrl: "not a url" }).success,
      false,
    );
  });
});
