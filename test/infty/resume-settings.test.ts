/** `relay infty resume` keeps the run's provider, model and base URL (recorded in run.json). */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { runRelayAsync, useTestRelay } from "../support/self.ts";

describe("relay infty resume", () => {
  test("a run on a non-default provider and base URL resumes on them; a flag on resume overrides and is recorded", async () => {
    useTestRelay();
    const server = await startFakeModelServer();
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-resume-"));
    const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home, NO_COLOR: "1" };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    try {
      server.enqueue(reply().text("I am still working on it."));
      const first = await runRelayAsync(
        [
          "infty",
          "run",
          "--no-repo",
          "--provider",
          "openai-chat",
          "--base-url",
          server.baseUrl,
          "-m",
          "chat-model",
          "--sandbox",
          "danger-full-access",
          "--sandbox-best-effort",
          "--run-id",
          "r1",
          "--max-turns",
          "1",
          "an objective",
        ],
        env,
      );
      assert.equal(first.status, 1, first.stderr);
      assert.equal(server.requests[0]?.path, "/v1/chat/completions");
      const meta = () =>
        JSON.parse(readFileSync(path.join(home, "infty", "r1", "run.json"), "utf8")) as {
          status: string;
          settings: Record<string, unknown>;
        };
      assert.equal(meta().status, "budget_exhausted");
      const recorded = {
        model: "chat-model",
        model_provider: "openai-chat",
        api_key_env: "OPENAI_API_KEY",
        sandbox_mode: "danger-full-access",
        sandbox_mechanism: "auto",
        sandbox_best_effort: true,
        approval_policy: "on-request",
        base_url: server.baseUrl,
      };
      const roleModel = (model: string) => ({
        model,
        model_provider: "openai-chat",
        api_key_env: "OPENAI_API_KEY",
        base_url: server.baseUrl,
      });
      const withRoles = (model: string) => ({
        ...recorded,
        model,
        roles: { solver: roleModel(model), director: roleModel(model), "verifier-1": roleModel(model) },
      });
      assert.deepEqual(meta().settings, withRoles("chat-model"));

      server.enqueue(reply().text("Still going."));
      const resumed = await runRelayAsync(["infty", "resume", "r1", "--max-turns", "2"], env);
      assert.equal(resumed.status, 1, resumed.stderr);
      const second = server.requests[1]!;
      assert.equal(second.path, "/v1/chat/completions", "the same provider and base URL");
      assert.equal((second.body as { model?: unknown }).model, "chat-model", "the same model");
      assert.deepEqual(
        meta().settings,
        withRoles("chat-model"),
        "best effort and the rest are kept without their flags",
      );

      server.enqueue(reply().text("And again."));
      const overridden = await runRelayAsync(["infty", "resume", "r1", "--max-turns", "3", "-m", "other-model"], env);
      assert.equal(overridden.status, 1, overridden.stderr);
      assert.equal((server.requests[2]!.body as { model?: unknown }).model, "other-model");
      assert.deepEqual(meta().settings, withRoles("other-model"), "the override is recorded, for every role");
      assert.equal(meta().settings.model_provider, "openai-chat");
    } finally {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
