/**
 * The capability selection (roots with ids, environments with their command lines) is durable:
 * recorded in every turn_context and in an infty run's run.json, restored by `relay run
 * --resume`, `--fork` and `relay infty resume`, and inherited by every infty role. Real CLI
 * runs, the fake model server (or the scripted provider for infty), and an extra environment
 * started over a pipe in its own cwd, whose skill exists for that executor only.
 */
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { recordedChoices } from "../../src/config/resume-settings.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { reply } from "../support/fake-model-server.ts";
import { turnContexts } from "../support/rollout-lines.ts";
import { runRelayAsync } from "../support/self.ts";
import { ENV_ROOT, envDir, executorIn, writeSkill } from "../support/skills.ts";
import { harness, inputOf } from "./run-support.ts";

const linuxOnly = { skip: process.platform !== "linux" && "a root at /proc/self/cwd needs Linux's /proc" };

const ROOT = { id: "deploy@1", location: { type: "environment", environmentId: "build", path: ENV_ROOT } };

describe("the capability selection is durable", () => {
  test("relay run records it; --resume and --fork restore it; a flag given on resume wins", linuxOnly, async () => {
    await using h = await harness();
    const one = envDir();
    const two = envDir();
    try {
      writeSkill(one.skills, "deploy", { body: "BODY-FROM-ONE\n" });
      writeSkill(two.skills, "deploy", { body: "BODY-FROM-TWO\n" });
      const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1", OPENAI_API_KEY: "sk-test" };
      const base = ["--base-url", h.server.baseUrl, "--sandbox", "danger-full-access"];
      const said = (i: number) => JSON.stringify(inputOf(h.server.requests[i]!.body));

      h.server.enqueue(reply().text("ANSWER-1"));
      const first = await runRelayAsync(
        [
          "run",
          ...base,
          "-C",
          h.workspace,
          "--environment",
          `build=${executorIn(one.dir)}`,
          "--capability-root",
          `id=deploy@1,env=build,path=${ENV_ROOT}`,
          "use $deploy",
        ],
        env,
      );
      assert.equal(first.status, 0, first.stderr);
      assert.match(said(0), /BODY-FROM-ONE/);

      h.server.enqueue(reply().text("ANSWER-2"));
      const resumed = await runRelayAsync(["run", "--resume", "last", "again $deploy"], env);
      assert.equal(resumed.status, 0, resumed.stderr);
      assert.match(
        said(1).split("ANSWER-1")[1]!,
        /BODY-FROM-ONE/,
        "the resumed session has the environment and the root back",
      );

      h.server.enqueue(reply().text("ANSWER-3"));
      const overridden = await runRelayAsync(
        ["run", "--resume", "last", "--environment", `build=${executorIn(two.dir)}`, "once more $deploy"],
        env,
      );
      assert.equal(overridden.status, 0, overridden.stderr);
      assert.match(said(2).split("ANSWER-2")[1]!, /BODY-FROM-TWO/, "--environment on resume wins");

      const [file] = await listRollouts(h.home);
      const ctx = turnContexts(file!.path);
      assert.equal(ctx.length, 3);
      for (const c of ctx) assert.deepEqual(c.capability_roots, [ROOT]);
      assert.deepEqual(
        ctx.map((c) => (c.environments as Array<{ command: string }>)[0]!.command),
        [executorIn(one.dir), executorIn(one.dir), executorIn(two.dir)],
      );

      h.server.enqueue(reply().text("forked"));
      const forked = await runRelayAsync(["run", "--fork", "last", "forked $deploy"], env);
      assert.equal(forked.status, 0, forked.stderr);
      assert.match(said(3).split("ANSWER-3")[1]!, /BODY-FROM-TWO/, "the fork carries the selection over");
      const rollouts = await listRollouts(h.home);
      assert.equal(rollouts.length, 2);
      for (const r of rollouts) assert.deepEqual(turnContexts(r.path).at(-1)!.capability_roots, [ROOT]);
    } finally {
      for (const d of [one.dir, two.dir]) rmSync(d, { recursive: true, force: true });
    }
  });

  test("rollouts recorded with `env:path` roots still read back", () => {
    const choices = recordedChoices({
      cwd: "/w",
      approval_policy: "never",
      sandbox_policy: "read-only",
      model: "m",
      capability_roots: ["local:/skills"],
    } as never);
    assert.deepEqual(choices.capabilityRoots, [
      { id: "local:/skills", location: { type: "environment", environmentId: "local", path: "/skills" } },
    ]);
  });

  test("infty roles inherit the run's selection from run.json, and resume restores it", linuxOnly, async () => {
    await using h = await harness();
    const one = envDir();
    try {
      writeSkill(one.skills, "deploy", { body: "INFTY-ROLE-BODY\n" });
      const script = path.join(h.home, "script.json");
      const skillTurn = { tool_calls: [{ name: "skill", arguments: { name: "deploy" } }] };
      writeFileSync(
        script,
        JSON.stringify({
          solver: { turns: [skillTurn, { text: "read it" }, skillTurn, { text: "read it again" }] },
          verifiers: [],
        }),
      );
      const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1" };
      const run = await runRelayAsync(
        [
          "infty",
          "run",
          "--no-repo",
          "--run-id",
          "sel",
          "--script",
          script,
          "--sandbox",
          "danger-full-access",
          "--max-turns",
          "1",
          "--environment",
          `build=${executorIn(one.dir)}`,
          "--capability-root",
          `id=deploy@1,env=build,path=${ENV_ROOT}`,
          "x",
        ],
        env,
      );
      assert.equal(run.status, 1, run.stderr);
      const runFile = path.join(h.home, "infty", "sel", "run.json");
      const meta = () =>
        JSON.parse(readFileSync(runFile, "utf8")) as {
          settings: Record<string, unknown>;
          roles: Array<{ role: string; rollout_path: string }>;
        };
      assert.deepEqual(meta().settings.capability_roots, [ROOT]);
      assert.deepEqual(meta().settings.environments, [{ name: "build", command: executorIn(one.dir) }]);
      const solver = meta().roles.find((r) => r.role === "solver")!.rollout_path;
      assert.match(
        readFileSync(solver, "utf8"),
        /"type":"function_call_output".*INFTY-ROLE-BODY/,
        "the Solver read the skill through the run's environment",
      );
      const opened = meta().roles.filter((r) => turnContexts(r.rollout_path).length > 0);
      assert.ok(opened.some((r) => r.role === "solver"));
      for (const role of opened) {
        const ctx = turnContexts(role.rollout_path).at(-1)!;
        assert.deepEqual(ctx.capability_roots, [ROOT], role.role);
        assert.deepEqual(ctx.environments, [{ name: "build", command: executorIn(one.dir) }], role.role);
      }

      const before = readFileSync(solver, "utf8").split("INFTY-ROLE-BODY").length;
      const resumed = await runRelayAsync(["infty", "resume", "sel", "--script", script, "--max-turns", "2"], env);
      assert.equal(resumed.status, 1, resumed.stderr);
      assert.deepEqual(
        meta().settings.environments,
        [{ name: "build", command: executorIn(one.dir) }],
        "kept without its flag",
      );
      assert.deepEqual(meta().settings.capability_roots, [ROOT]);
      const solverAfter = meta().roles.find((r) => r.role === "solver")!.rollout_path;
      assert.ok(
        readFileSync(solverAfter, "utf8").split("INFTY-ROLE-BODY").length > before,
        "the resumed Solver read it again through the restored environment",
      );
    } finally {
      rmSync(one.dir, { recursive: true, force: true });
    }
  });
});
