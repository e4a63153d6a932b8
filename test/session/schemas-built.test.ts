/**
 * A whole `relay run` turn with a sandboxed tool call builds no zod schema in relay run or its
 * executor (the container's init loads no zod at all), nor does a code-mode turn in its host:
 * each message, config.toml and its [memories] go through generated checks. Building a schema
 * costs milliseconds of start-up and of a first tool call (docs/performance.md, "Schemas nobody
 * builds"); a change that builds one on this path names the place here (src/util/lazy-schema.ts
 * reports it).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { type FakeModelServer, reply, startFakeModelServer } from "../support/fake-model-server.ts";
import { runRelayAsync } from "../support/self.ts";

interface Report {
  argv: string[];
  built: number;
  first?: string;
}

const root = mkdtempSync(path.join(os.tmpdir(), "relay-schemas-built-"));
after(() => rmSync(root, { recursive: true, force: true }));

interface Turn {
  name: string;
  /** What the fake model answers, in order; then "done". */
  replies: (server: FakeModelServer) => void;
  /** relay run's arguments before `-C <work> go`. */
  args: (server: FakeModelServer) => string[];
  config?: (server: FakeModelServer) => string;
  env?: NodeJS.ProcessEnv;
}

/** Runs one turn with each relay process reporting its built schemas; returns the work folder and the reports. */
async function reportedTurn(t: Turn): Promise<{ work: string; reports: Report[] }> {
  const server = await startFakeModelServer();
  try {
    const [home, work, reports] = ["home", "work", "reports"].map((d) => path.join(root, t.name, d)) as [
      string,
      string,
      string,
    ];
    for (const d of [home, work, reports]) mkdirSync(d, { recursive: true });
    if (t.config) writeFileSync(path.join(home, "config.toml"), t.config(server));
    t.replies(server);
    server.enqueue(reply().text("done"));
    const env = { ...process.env, RELAY_HOME: home, ...t.env, RELAY_TEST_SCHEMAS_BUILT_DIR: reports };
    const r = await runRelayAsync(["run", ...t.args(server), "-C", work, "go"], env);
    assert.equal(r.status, 0, r.stderr);
    const all = readdirSync(reports).map((f) => JSON.parse(readFileSync(path.join(reports, f), "utf8")) as Report);
    return { work, reports: all };
  } finally {
    await server.close();
  }
}

function assertNoneBuilt(reports: Report[], processes: string[]): void {
  assert.deepEqual(reports.map((p) => p.argv[0]).sort(), processes, JSON.stringify(reports.map((p) => p.argv)));
  for (const p of reports)
    assert.equal(p.built, 0, `relay ${p.argv.join(" ")} built ${p.built}; the first at:\n${p.first}`);
}

describe("schemas built by a whole turn", () => {
  test("relay run with config.toml and flags, one sandboxed exec_command, then the answer: no process builds a schema", async () => {
    const { work, reports } = await reportedTurn({
      name: "exec",
      config: (server) =>
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
      replies: (server) =>
        server.enqueue(reply().toolCall("exec_command", { cmd: "echo made > out.txt" }, { callId: "c1" })),
      args: (server) => ["--approval", "never", "-s", "workspace-write", "--base-url", server.baseUrl],
      env: { RELAY_TEST_KEY: "sk-test" },
    });
    assert.equal(readFileSync(path.join(work, "out.txt"), "utf8"), "made\n", "the command ran");
    // The container's init loads no zod at all (test/import-graph.test.ts), so it has nothing to report.
    assertNoneBuilt(reports, ["executor", "run"]);
  });

  test("a code-mode turn whose cell calls a tool: neither relay run, its executor nor the code-mode host builds one", async () => {
    const js = 'const r = await tools.exec_command({ cmd: "echo cell > cell.txt" }); text("ran");';
    const { work, reports } = await reportedTurn({
      name: "code-mode",
      replies: (server) => server.enqueue(reply().customToolCall("exec", js, { callId: "c1" })),
      args: (server) => [
        "--code-mode",
        "--approval",
        "never",
        "-s",
        "workspace-write",
        "--base-url",
        server.baseUrl,
        "-m",
        "test-model",
      ],
      env: { OPENAI_API_KEY: "sk-test" },
    });
    assert.equal(readFileSync(path.join(work, "cell.txt"), "utf8"), "cell\n", "the cell's tool call ran");
    assertNoneBuilt(reports, ["code-mode-host", "executor", "run"]);
  });
});
