import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { CodeModeTools, parseExecInput } from "../../src/session/code-mode.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { runRelayAsync, useTestRelay } from "../support/self.ts";
import { until } from "../support/wait.ts";

describe("relay run --code-mode", () => {
  test("the model's JS calls tools.exec_command on the real executor; wait and a failing script", async () => {
    await using h = await harness();
    const js = [
      'const out = await tools.exec_command({ cmd: "echo code-$((40+2)) > cm.txt; cat cm.txt" });',
      "text(out);",
      'const bad = await tools.exec_command({ cmd: "exit 3" });',
      'text("exit " + bad.exit_code);',
      'store("seen", 1);',
      'try { await tools.exec_command({ nope: true }) } catch (e) { text("nested failure: " + String(e).split("\\n")[0]) }',
    ].join("\n");
    h.server.enqueue(
      reply().customToolCall("exec", js, { callId: "call_js" }),
      reply().customToolCall(
        "exec",
        '// @exec: {"yield_time_ms": 50}\ntext("part one"); yield_control(); await new Promise((r) => setTimeout(r, 100)); text(String(load("seen")))',
        { callId: "call_y" },
      ),
      reply().toolCall("wait", { cell_id: "2", yield_time_ms: 5000 }, { callId: "call_w" }),
      reply().customToolCall("exec", 'throw new Error("on purpose")', { callId: "call_f" }),
      reply().text("all done"),
    );
    const r = await h.run({ prompt: "use code mode", codeMode: true });
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.outcome.finalMessage, "all done");
    assert.equal(readFileSync(path.join(h.workspace, "cm.txt"), "utf8"), "code-42\n");

    const tools = h.server.requests[0]!.body.tools as Array<{ type: string; name: string }>;
    assert.equal(tools.find((t) => t.name === "exec")?.type, "custom");
    assert.equal(tools.find((t) => t.name === "wait")?.type, "function");

    const outputOf = (req: number, callId: string) =>
      inputOf(h.server.requests[req]!.body).find((i) => i.call_id === callId && i.type.endsWith("_output"))
        ?.output as string;
    const first = outputOf(1, "call_js");
    assert.match(first, /^Script completed\nWall time \d+\.\d seconds\nOutput:\n/);
    const json = JSON.parse(first.split("\n")[3]!) as Record<string, unknown>;
    assert.equal(json.exit_code, 0);
    assert.equal(json.output, "code-42\n");
    assert.equal(typeof json.wall_time_seconds, "number");
    assert.match(first, /^exit 3$/m, "a non-zero exit resolves with its exit code");
    assert.match(first, /nested failure: The exec_command tool was called with invalid arguments/);

    assert.match(
      outputOf(2, "call_y"),
      /^Script running with cell ID 2\nWall time \d+\.\d seconds\nOutput:\npart one$/,
    );
    assert.match(outputOf(3, "call_w"), /^Script completed\nWall time \d+\.\d seconds\nOutput:\n1$/);
    const failed = outputOf(4, "call_f");
    assert.match(failed, /^Script failed\nWall time \d+\.\d seconds\nOutput:\nScript error:\nError: on purpose/);
  });

  test("the CLI flag offers exec; without it a custom exec call is not available", async () => {
    await using h = await harness();
    h.server.enqueue(reply().customToolCall("exec", 'text("via cli")', { callId: "c1" }), reply().text("ok"));
    const env = { ...process.env, RELAY_HOME: h.home, NO_COLOR: "1" };
    const base = [
      "--base-url",
      h.server.baseUrl,
      "-m",
      "test-model",
      "--sandbox",
      "danger-full-access",
      "-C",
      h.workspace,
    ];
    const on = await runRelay([...base, "--code-mode", "go"], env);
    assert.equal(on.status, 0, on.stderr);
    const out = inputOf(h.server.requests[1]!.body).find(
      (i) => i.call_id === "c1" && i.type === "custom_tool_call_output",
    )?.output as string;
    assert.match(out, /^Script completed\n.*\nOutput:\nvia cli$/s);

    h.server.enqueue(reply().customToolCall("exec", 'text("x")', { callId: "c2" }), reply().text("ok"));
    const off = await runRelay([...base, "go"], env);
    assert.equal(off.status, 0, off.stderr);
    assert.ok(!(h.server.requests[2]!.body.tools as Array<{ name: string }>).some((t) => t.name === "exec"));
    assert.equal(
      inputOf(h.server.requests[3]!.body).find((i) => i.call_id === "c2" && i.type === "custom_tool_call_output")
        ?.output,
      "tool exec is not available in this session",
    );
  });

  test("the host starts with the session, before the first exec; a host that cannot start fails that exec clearly", async () => {
    useTestRelay();
    const runner = { specs: [], call: async () => ({ output: "", success: true, display: "" }) };
    const provider = new HostProvider();
    const tools = new CodeModeTools(runner, provider);
    await until(tools.prestart(), "the session started ahead of the first exec to open");
    assert.ok(provider.hostPid, "a host runs before any exec call");
    const pid = provider.hostPid;
    const out = await tools.exec("c1", 'text("ready")');
    assert.match(out.output, /^Script completed\n[\s\S]*ready/);
    assert.equal(provider.hostPid, pid, "the first exec used the host started ahead");
    await tools.close();

    const missing = new CodeModeTools(
      runner,
      new HostProvider({ program: { kind: "path", path: "/nonexistent/relay-code-mode-host", source: "env" } }),
    );
    void missing.prestart();
    const failed = await missing.exec("c2", 'text("x")');
    assert.equal(failed.success, false);
    assert.match(failed.output, /^exec failed: .*code-mode host/);
    await missing.close();
  });

  test("exec input: pragma and empty input", () => {
    assert.deepEqual(parseExecInput('// @exec: {"yield_time_ms": 5, "max_output_tokens": 7}\ntext(1)'), {
      ok: { source: "text(1)", pragma: { yield_time_ms: 5, max_output_tokens: 7 } },
    });
    assert.ok("error" in parseExecInput("  "));
    assert.ok("error" in parseExecInput('// @exec: {"other": 1}\ntext(1)'));
    assert.ok("error" in parseExecInput('// @exec: {"yield_time_ms": 5}\n'));
    assert.deepEqual(parseExecInput("text(2)"), { ok: { source: "text(2)", pragma: {} } });
  });
});

function runRelay(args: string[], env: NodeJS.ProcessEnv) {
  return runRelayAsync(["run", ...args], env);
}
