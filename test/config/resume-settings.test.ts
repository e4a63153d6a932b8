/**
 * `relay run --resume` continues a session with the provider, model, base URL, approval and
 * sandbox it had, through the real CLI and the fake model server; a flag given on resume wins
 * and is recorded. The recorded values are checked on the way in (a Codex provider is ignored).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { defaultConfig } from "../../src/config/config.ts";
import { recordedOverrides } from "../../src/config/resume-settings.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { harness } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { turnContexts } from "../support/rollout-lines.ts";
import { runRelayAsync } from "../support/self.ts";

describe("resume restores the session's settings", () => {
  test("a non-default provider and base URL come back; a flag on resume overrides and is recorded", async () => {
    await using h = await harness();
    const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1" };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    h.server.enqueue(reply().text("first answer"));
    const first = await runRelayAsync(
      [
        "run",
        "--provider",
        "openai-chat",
        "--base-url",
        h.server.baseUrl,
        "-m",
        "chat-model",
        "--approval",
        "never",
        "--sandbox",
        "danger-full-access",
        "-C",
        h.workspace,
        "hello",
      ],
      env,
    );
    assert.equal(first.status, 0, first.stderr);

    h.server.enqueue(reply().text("second answer"));
    const resumed = await runRelayAsync(["run", "--resume", "last", "and again"], env);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.match(resumed.stdout, /second answer/);
    const second = h.server.requests[1]!;
    assert.equal(second.path, "/v1/chat/completions", "the same provider");
    assert.equal((second.body as { model?: unknown }).model, "chat-model", "the same model");

    h.server.enqueue(reply().text("third answer"));
    const overridden = await runRelayAsync(["run", "--resume", "last", "-m", "other-model", "once more"], env);
    assert.equal(overridden.status, 0, overridden.stderr);
    const third = h.server.requests[2]!;
    assert.equal(third.path, "/v1/chat/completions");
    assert.equal((third.body as { model?: unknown }).model, "other-model");

    const [file] = await listRollouts(h.home);
    const ctx = turnContexts(file!.path);
    assert.equal(ctx.length, 3);
    for (const c of ctx) {
      assert.equal(c.model_provider, "openai-chat");
      assert.equal(c.base_url, h.server.baseUrl);
      assert.equal(c.approval_policy, "never");
      assert.equal((c.sandbox_policy as { type: string }).type, "danger-full-access", "Codex's tagged shape");
    }
    assert.deepEqual(
      ctx.map((c) => c.model),
      ["chat-model", "chat-model", "other-model"],
    );
  });

  test("reasoning, code mode and capability roots come back on resume; --no-code-mode turns code mode off", async () => {
    await using h = await harness();
    const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1", OPENAI_API_KEY: "sk-test" };
    delete env.OPENAI_BASE_URL;
    const skills = mkdtempSync(path.join(os.tmpdir(), "relay-skills-"));
    try {
      const toolNames = (i: number) =>
        ((h.server.requests[i]!.body as { tools?: Array<{ name?: string }> }).tools ?? []).map((t) => t.name);
      const reasoning = (i: number) => (h.server.requests[i]!.body as { reasoning?: unknown }).reasoning;
      h.server.enqueue(reply().text("first"));
      const first = await runRelayAsync(
        [
          "run",
          "--base-url",
          h.server.baseUrl,
          "--reasoning-effort",
          "high",
          "--reasoning-summary",
          "concise",
          "--code-mode",
          "--capability-root",
          `local:${skills}`,
          "--sandbox",
          "danger-full-access",
          "-C",
          h.workspace,
          "hello",
        ],
        env,
      );
      assert.equal(first.status, 0, first.stderr);
      h.server.enqueue(reply().text("second"));
      const resumed = await runRelayAsync(["run", "--resume", "last", "again"], env);
      assert.equal(resumed.status, 0, resumed.stderr);
      assert.deepEqual(reasoning(1), { effort: "high", summary: "concise" });
      assert.ok(toolNames(1).includes("exec"), `code mode is back: ${toolNames(1).join(", ")}`);
      h.server.enqueue(reply().text("third"));
      const off = await runRelayAsync(
        ["run", "--resume", "last", "--no-code-mode", "--reasoning-effort", "low", "once more"],
        env,
      );
      assert.equal(off.status, 0, off.stderr);
      assert.ok(!toolNames(2).includes("exec"), "--no-code-mode wins over the recorded code mode");
      assert.deepEqual(reasoning(2), { effort: "low", summary: "concise" });
      const [file] = await listRollouts(h.home);
      const ctx = turnContexts(file!.path);
      assert.deepEqual(
        ctx.map((c) => c.code_mode),
        [true, true, false],
      );
      assert.deepEqual(
        ctx.map((c) => c.effort),
        ["high", "high", "low"],
      );
      for (const c of ctx) {
        assert.deepEqual(c.capability_roots, [
          { id: `local:${skills}`, location: { type: "environment", environmentId: "local", path: skills } },
        ]);
        assert.equal(c.executor_name, "local");
      }
    } finally {
      rmSync(skills, { recursive: true, force: true });
    }
  });

  test("recorded values relay cannot use fall back to the configuration", () => {
    const base = defaultConfig();
    const codex = {
      cwd: "/w",
      approval_policy: "on-request",
      sandbox_policy: { type: "workspace-write" },
      model: "gpt-5",
      model_provider: "openai",
    };
    assert.deepEqual(recordedOverrides(codex as never, base), {
      model: "gpt-5",
      approval_policy: "on-request",
      sandbox_mode: "workspace-write",
    });
    assert.deepEqual(
      recordedOverrides(
        { cwd: "/w", approval_policy: "sometimes", sandbox_policy: "read-only", base_url: "ftp://x" } as never,
        base,
      ),
      { sandbox_mode: "read-only" },
    );
    assert.deepEqual(recordedOverrides(undefined, base), {});
  });
});
