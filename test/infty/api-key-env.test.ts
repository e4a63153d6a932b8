/** `relay infty run --api-key-env`: the variable its own credential error suggests, used by every role and recorded for resume. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { reply } from "../support/fake-model-server.ts";
import { setup } from "../support/infty-timeline.ts";
import { runRelayAsync } from "../support/self.ts";

describe("relay infty run --api-key-env", () => {
  test("a missing variable is named (exit 2, nothing started); a set one is sent by every role and recorded", async () => {
    await using t = await setup();
    const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: t.home };
    delete env.RELAY_TEST_INFTY_KEY;
    const remote = await runRelayAsync(
      [
        "infty",
        "run",
        "--no-repo",
        "--api-key-env",
        "RELAY_TEST_INFTY_KEY",
        "--base-url",
        "https://api.example.invalid/v1",
        "-m",
        "m",
        "x",
      ],
      env,
    );
    assert.equal(remote.status, 2, remote.stderr);
    assert.match(remote.stderr, /^relay: RELAY_TEST_INFTY_KEY is not set, .*Nothing was started\.\n$/);

    t.server.enqueue(reply().text("thinking"));
    const run = await runRelayAsync(
      [
        "infty",
        "run",
        "--no-repo",
        "--run-id",
        "k",
        "--api-key-env",
        "RELAY_TEST_INFTY_KEY",
        "--base-url",
        t.server.baseUrl,
        "-m",
        "m",
        "-s",
        "danger-full-access",
        "--max-turns",
        "1",
        "x",
      ],
      { ...env, RELAY_TEST_INFTY_KEY: "sk-infty-test" },
    );
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /the turn budget \(1 Solver turns\) ran out/);
    assert.equal(t.server.requests[0]!.headers.authorization, "Bearer sk-infty-test");
    const settings = (
      JSON.parse(readFileSync(path.join(t.home, "infty", "k", "run.json"), "utf8")) as {
        settings: { api_key_env: string; roles: Record<string, { api_key_env: string }> };
      }
    ).settings;
    assert.equal(settings.api_key_env, "RELAY_TEST_INFTY_KEY");
    assert.deepEqual(
      Object.values(settings.roles).map((r) => r.api_key_env),
      ["RELAY_TEST_INFTY_KEY", "RELAY_TEST_INFTY_KEY", "RELAY_TEST_INFTY_KEY"],
    );
  });
});
