/**
 * Issue 20's whole path through the CLI: `relay run` with a capability root on a second
 * environment (an executor started over a pipe, in its own cwd, so the root exists for that
 * executor only) lists the root's skills, reads one through that executor when the model calls
 * `skill`, and calls the root's MCP server there; resumed with no flags, the session has the
 * same selection and the same server back. A Codex `[mcp_servers]` block in config.toml works
 * beside it.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { bunPath, fixtureToml, MCP_FIXTURE } from "../support/mcp.ts";
import { runRelayAsync } from "../support/self.ts";
import { ENV_ROOT, envDir, executorIn, writeSkill } from "../support/skills.ts";

const linuxOnly = { skip: process.platform !== "linux" && "a root at /proc/self/cwd needs Linux's /proc" };

const toolNames = (body: unknown): string[] =>
  ((body as { tools?: Array<{ name?: string }> }).tools ?? []).map((t) => t.name ?? "");
const callOutput = (body: unknown, callId: string): string =>
  String(inputOf(body).find((i) => i.type === "function_call_output" && i.call_id === callId)?.output ?? "");

/** A plugin root: a skill and a `.mcp.json` whose server starts from the root's own bin/, in work/. */
function pluginRoot(root: string): void {
  writeSkill(root, "deploy", { description: "How to deploy", body: "PLUGIN-DEPLOY-BODY\n" });
  mkdirSync(path.join(root, "bin"), { recursive: true });
  mkdirSync(path.join(root, "work"), { recursive: true });
  const script = path.join(root, "bin/serve");
  writeFileSync(script, `#!/bin/sh\nexec ${JSON.stringify(bunPath())} ${JSON.stringify(MCP_FIXTURE)} "$@"\n`);
  chmodSync(script, 0o755);
  writeFileSync(
    path.join(root, ".mcp.json"),
    JSON.stringify({
      mcpServers: {
        deploy: { command: "bin/serve", args: ["--name", "deploy"], env: { FIXTURE_MODE: "plugin" }, cwd: "work" },
      },
    }),
  );
}

describe("capabilities end to end", () => {
  test(
    "a root on a second environment: its skills listed, one read there, its MCP server called there; resume keeps it all",
    linuxOnly,
    async () => {
      await using h = await harness();
      const env = envDir();
      try {
        pluginRoot(env.skills);
        // A Codex user's block, pasted as is, beside the root's server.
        writeFileSync(path.join(h.home, "config.toml"), fixtureToml("notes"));
        const vars: NodeJS.ProcessEnv = {
          ...process.env,
          RELAY_HOME: h.home,
          NO_COLOR: "1",
          OPENAI_API_KEY: "sk-test",
        };
        const base = ["--base-url", h.server.baseUrl, "--sandbox", "danger-full-access"];

        h.server.enqueue(
          reply()
            .toolCall("skill", { name: "deploy" }, { callId: "read" })
            .toolCall("deploy__where", {}, { callId: "where" })
            .toolCall("notes__echo", { text: "local" }, { callId: "echo" }),
          reply().text("ANSWER-1"),
        );
        const first = await runRelayAsync(
          [
            "run",
            ...base,
            "-C",
            h.workspace,
            "--environment",
            `build=${executorIn(env.dir)}`,
            "--capability-root",
            `id=deploy@1,env=build,path=${ENV_ROOT}`,
            "deploy it",
          ],
          vars,
        );
        assert.equal(first.status, 0, first.stderr);
        const [ask, answer] = h.server.requests;
        const names = toolNames(ask!.body);
        for (const t of ["skill", "deploy__where", "notes__echo"])
          assert.ok(names.includes(t), `${t} offered: ${names.join(", ")}`);
        assert.match(
          JSON.stringify(inputOf(ask!.body)[0]),
          /deploy: How to deploy \(environment build, root deploy@1\)/,
        );
        assert.match(callOutput(answer!.body, "read"), /environment="build" root="deploy@1"[^>]*>\nPLUGIN-DEPLOY-BODY/);
        // The server ran where the root is: the environment's directory, not this process's or the session executor's.
        assert.deepEqual(JSON.parse(callOutput(answer!.body, "where")), {
          cwd: path.join(realpathSync(env.skills), "work"),
          mode: "plugin",
        });
        assert.equal(callOutput(answer!.body, "echo"), "echo: local");

        h.server.enqueue(reply().toolCall("deploy__where", {}, { callId: "where-again" }), reply().text("ANSWER-2"));
        const resumed = await runRelayAsync(["run", "--resume", "last", "again"], vars);
        assert.equal(resumed.status, 0, resumed.stderr);
        const again = h.server.requests.at(-1)!;
        assert.deepEqual(
          JSON.parse(callOutput(again.body, "where-again")),
          { cwd: path.join(realpathSync(env.skills), "work"), mode: "plugin" },
          "the resumed session runs the root's server on the same environment",
        );
      } finally {
        rmSync(env.dir, { recursive: true, force: true });
      }
    },
  );
});
