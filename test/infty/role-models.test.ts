/**
 * A model per infty role, end to end against the fake model server: every request says which
 * role sent it (its role prompt), so the test checks each role's model, API and reasoning effort
 * in the requests, in run.json and in `relay infty status`, before and after a Ctrl-C and resume,
 * and that a --verifier-model given on resume replaces the recorded one.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import {
  type FakeModelServer,
  hang,
  type RecordedRequest,
  reply,
  startFakeModelServer,
} from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync, useTestRelay } from "../support/self.ts";

type Role = "solver" | "director" | "verifier";
const roleOf = (r: RecordedRequest): Role | undefined =>
  r.rawBody.includes("# Role: Solver")
    ? "solver"
    : r.rawBody.includes("# Role: Director")
      ? "director"
      : r.rawBody.includes("# Role: Verifier")
        ? "verifier"
        : undefined;
const json = (v: unknown) => reply().text(JSON.stringify(v));
const direction = json({ type: "direction_request", prompt: "which way?" });
const directive = json({ directive: "check it", rationale: "" });
// artifacts/ exists in every run store, so the claim resolves and the Verifiers are asked.
const verification = json({ type: "verification_request", claim_path: "artifacts", notes: null });
const fail = () => json({ verdict: "fail", reasons: ["not yet"], suggestions: [] });

/**
 * The role lanes of the next relay command: each role's replies in order, whatever its model (a
 * wrong one shows in the assertions). The server takes the first matching lane, so each
 * command's lanes match only while it is the current one.
 */
let command = 0;
function lanes(server: FakeModelServer, replies: Record<Role, ReturnType<typeof reply | typeof hang>[]>): void {
  const mine = ++command;
  for (const role of ["solver", "director", "verifier"] as const)
    server.route((r) => command === mine && roleOf(r) === role, ...replies[role]);
}

/** The requests from `from` on, by role: [path, model, effort]. */
function seen(server: FakeModelServer, from: number): Record<Role, Array<[string, string, string | undefined]>> {
  const out: Record<Role, Array<[string, string, string | undefined]>> = { solver: [], director: [], verifier: [] };
  for (const r of server.requests.slice(from)) {
    const role = roleOf(r);
    assert.ok(role, `a request from no role: ${r.rawBody.slice(0, 200)}`);
    out[role].push([r.path, String(r.body.model), r.body.reasoning?.effort as string | undefined]);
  }
  out.verifier.sort((a, b) => a[1].localeCompare(b[1]));
  return out;
}

describe("relay infty: a model per role", () => {
  test("three models and two APIs by role are used, recorded, shown, and used again after Ctrl-C and resume; a flag on resume overrides", async () => {
    useTestRelay();
    const server = await startFakeModelServer();
    const home = mkdtempSync(path.join(os.tmpdir(), "relay-infty-roles-"));
    const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home, NO_COLOR: "1" };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    const chat = "/v1/chat/completions";
    const solver: [string, string, undefined] = [chat, "solver-model", undefined];
    const director: [string, string, string] = ["/v1/responses", "director-model", "high"];
    const meta = () =>
      JSON.parse(readFileSync(path.join(home, "infty", "roles", "run.json"), "utf8")) as {
        status: string;
        settings: { model: string; roles: Record<string, Record<string, unknown>> };
      };
    try {
      // Solver: direction, then a claim, then it hangs until Ctrl-C.
      lanes(server, {
        solver: [direction, verification, hang()],
        director: [directive],
        verifier: [fail(), fail(), fail()],
      });
      const args = [
        "infty",
        "run",
        "--no-repo",
        "--run-id",
        "roles",
        "--provider",
        "openai-chat",
        "--base-url",
        server.baseUrl,
        "--sandbox",
        "danger-full-access",
        "--verifiers",
        "3",
      ];
      const models = [
        "--solver-model",
        "solver-model",
        "--director-model",
        "director-model,provider=openai-responses,effort=high",
        "--verifier-model",
        "v1-model",
        "--verifier-model",
        "v2-model",
      ];
      const first = await interruptedWhenHolding(server, [...args, ...models, "an objective"], env);
      assert.equal(first.status, 130, first.stderr);
      assert.equal(meta().status, "interrupted");
      const verifiers = [
        [chat, "v1-model", undefined],
        [chat, "v2-model", undefined],
        [chat, "v2-model", undefined],
      ];
      assert.deepEqual(
        seen(server, 0),
        { solver: [solver, solver, solver], director: [director], verifier: verifiers },
        "verifier-3 repeats the last --verifier-model",
      );
      const roleRecord = (model: string, extra: Record<string, unknown> = {}) => ({
        model,
        model_provider: "openai-chat",
        api_key_env: "OPENAI_API_KEY",
        base_url: server.baseUrl,
        ...extra,
      });
      const recorded = {
        solver: roleRecord("solver-model"),
        director: roleRecord("director-model", { model_provider: "openai-responses", model_reasoning_effort: "high" }),
        "verifier-1": roleRecord("v1-model"),
        "verifier-2": roleRecord("v2-model"),
        "verifier-3": roleRecord("v2-model"),
      };
      assert.deepEqual(meta().settings.roles, recorded);
      assert.equal(meta().settings.model, "gpt-5.1-codex", "the run's default model stays the configured one");

      const status = await runRelayAsync(["infty", "show", "roles"], env);
      assert.equal(status.status, 0, status.stderr);
      assert.match(
        status.stdout,
        /\n {2}director {4}director-model \(openai-responses, http:\/\/127\.0\.0\.1:\d+\/v1, effort high\)\n/,
      );
      assert.match(status.stdout, /\n {2}verifier-3 {2}v2-model \(openai-chat, /);

      // Resumed without model flags (3 Solver turns so far): the interrupted turn goes on and asks
      // for direction, the next sends a claim, the last another one (then the budget is used up).
      const mark = server.requests.length;
      lanes(server, {
        solver: [direction, verification, verification],
        director: [directive],
        verifier: [fail(), fail(), fail()],
      });
      const resumed = await runRelayAsync(["infty", "resume", "roles", "--max-turns", "6"], env);
      assert.equal(resumed.status, 1, resumed.stderr);
      assert.match(meta().status, /budget_exhausted/);
      assert.deepEqual(seen(server, mark), {
        solver: [solver, solver, solver],
        director: [director],
        verifier: verifiers,
      });
      assert.deepEqual(meta().settings.roles, recorded, "resume records the same models");

      // A --verifier-model on resume replaces every Verifier's model and is recorded; the rest stay.
      // The pending claim goes to the Verifiers, then one more Solver turn.
      const mark2 = server.requests.length;
      lanes(server, { solver: [verification], director: [], verifier: [fail(), fail(), fail()] });
      const overridden = await runRelayAsync(
        ["infty", "resume", "roles", "--max-turns", "7", "--verifier-model", "v3-model"],
        env,
      );
      assert.equal(overridden.status, 1, overridden.stderr);
      const v3 = [chat, "v3-model", undefined];
      assert.deepEqual(seen(server, mark2), { solver: [solver], director: [], verifier: [v3, v3, v3] });
      assert.deepEqual(meta().settings.roles, {
        ...recorded,
        "verifier-1": roleRecord("v3-model"),
        "verifier-2": roleRecord("v3-model"),
        "verifier-3": roleRecord("v3-model"),
      });
    } finally {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

/** Runs relay and sends it SIGINT (Ctrl-C) once the server holds a request of it open. */
function interruptedWhenHolding(
  server: FakeModelServer,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stderr: string }> {
  const [cmd, ...pre] = relayArgv();
  const child = spawn(cmd!, [...pre, ...args], { cwd: REPO_ROOT, env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  void server.whenHolding().then(() => child.kill("SIGINT"));
  return new Promise((resolve) =>
    child.once("close", (status, signal) => resolve({ status: status ?? (signal ? 128 + 2 : null), stderr })),
  );
}
