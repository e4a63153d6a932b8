/**
 * A whole `relay run` turn with a sandboxed tool call builds no zod schema in relay run or its
 * executor (the container's init loads no zod at all): each message, config.toml and its
 * [memories] go through generated checks. Building a schema costs milliseconds of start-up and
 * of a first tool call (docs/performance.md, "Schemas nobody builds"); a change that builds one
 * on this path names the place here (src/util/lazy-schema.ts reports it).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { runRelayAsync } from "../support/self.ts";

interface Report {
  argv: string[];
  built: number;
  first?: string;
}

const root = mkdtempSync(path.join(os.tmpdir(), "relay-schemas-built-"));
after(() => rmSync(root, { recursive: true, force: true }));

describe("schemas built by a whole turn", () => {
  test("relay run with config.toml and flags, one sandboxed exec_command, then the answer: no process builds a schema", async () => {
    const server = await startFakeModelServer();
    try {
      const [home, work, reports] = ["home", "work", "reports"].map((d) => path.join(root, d)) as [
        string,
        string,
        string,
      ];
      for (const d of [home, work, reports]) mkdirSync(d);
      writeFileSync(
        path.join(home, "config.toml"),
        [
          'model = "test-model"',
          `base_url = "${server.baseUrl}"`,
          'api_key_env = "RELAY_TEST_KEY"',
          "[shell]",
          "login = false",
          "[memories]",
          "max_unused_days = 400",
          "",
        ].join("\n"),
      );
      server.enqueue(reply().toolCall("exec_command", { cmd: "echo made > out.txt" }, { callId: "c1" }));
      server.enqueue(reply().text("done"));
      const env = {
        ...process.env,
        RELAY_HOME: home,
        RELAY_TEST_KEY: "sk-test",
        RELAY_TEST_SCHEMAS_BUILT_DIR: reports,
      };
      const r = await runRelayAsync(
        ["run", "--approval", "never", "-s", "workspace-write", "--base-url", server.baseUrl, "-C", work, "go"],
        env,
      );
      assert.equal(r.status, 0, r.stderr);
      assert.equal(readFileSync(path.join(work, "out.txt"), "utf8"), "made\n", "the command ran");
      const all = readdirSync(reports).map((f) => JSON.parse(readFileSync(path.join(reports, f), "utf8")) as Report);
      // The container's init loads no zod at all (test/import-graph.test.ts), so it has nothing to report.
      assert.deepEqual(all.map((p) => p.argv[0]).sort(), ["executor", "run"], JSON.stringify(all.map((p) => p.argv)));
      for (const p of all)
        assert.equal(p.built, 0, `relay ${p.argv.join(" ")} built ${p.built}; the first at:\n${p.first}`);
    } finally {
      await server.close();
    }
  });

  test("a code-mode turn whose cell calls a tool: neither relay run, its executor nor the code-mode host builds one", async () => {
    const server = await startFakeModelServer();
    try {
      const [home, work, reports] = ["cm-home", "cm-work", "cm-reports"].map((d) => path.join(root, d)) as [
        string,
        string,
        string,
      ];
      for (const d of [home, work, reports]) mkdirSync(d);
      const js = 'const r = await tools.exec_command({ cmd: "echo cell > cell.txt" }); text("ran");';
      server.enqueue(reply().customToolCall("exec", js, { callId: "c1" }));
      server.enqueue(reply().text("done"));
      const env = {
        ...process.env,
        RELAY_HOME: home,
        OPENAI_API_KEY: "sk-test",
        RELAY_TEST_SCHEMAS_BUILT_DIR: reports,
      };
      const args = ["run", "--code-mode", "--approval", "never", "-s", "workspace-write"];
      const r = await runRelayAsync([...args, "--base-url", server.baseUrl, "-m", "test-model", "-C", work, "go"], env);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(readFileSync(path.join(work, "cell.txt"), "utf8"), "cell\n", "the cell's tool call ran");
      const all = readdirSync(reports).map((f) => JSON.parse(readFileSync(path.join(reports, f), "utf8")) as Report);
      assert.deepEqual(
        all.map((p) => p.argv[0]).sort(),
        ["code-mode-host", "executor", "run"],
        JSON.stringify(all.map((p) => p.argv)),
      );
      for (const p of all)
        assert.equal(p.built, 0, `relay ${p.argv.join(" ")} built ${p.built}; the first at:\n${p.first}`);
    } finally {
      await server.close();
    }
  });
});
