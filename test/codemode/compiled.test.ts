/** The compiled binary serves code mode by itself: the QuickJS wasm is inlined (single-file variant). */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { buildBinary } from "../../scripts/build.ts";
import { HOST_BINARY_NAME, resolveHostProgram } from "../../src/protocol/code-mode-host-program.ts";
import { HostProvider } from "../../src/session/code-mode-host/provider.ts";
import { ok } from "../../src/util/result.ts";

describe("code mode in the compiled binary", { skip: !process.versions.bun && "needs Bun to compile" }, () => {
  let dir = "";
  let bin = "";
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "relay-cm-build-"));
    bin = buildBinary({ outfile: path.join(dir, "relay") }).outfile;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("--help documents the host", () => {
    const r = spawnSync(bin, ["code-mode-host", "--help"], { cwd: "/", encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /codemode\/execute/);
    assert.match(r.stdout, /RELAY_CODE_MODE_HOST_PATH/);
  });

  test("a relay-code-mode-host copy next to relay is found and runs cells with nested tool calls", async () => {
    copyFileSync(bin, path.join(dir, HOST_BINARY_NAME));
    const program = resolveHostProgram({ PATH: "" }, bin);
    assert.deepEqual(program, { kind: "path", path: path.join(dir, HOST_BINARY_NAME), source: "sibling" });
    const cwd = process.cwd();
    process.chdir("/");
    const provider = new HostProvider({ program });
    try {
      const s = await provider.openSession({ invokeTool: async (call) => ok({ echoed: call.input }) });
      assert.ok("ok" in s, JSON.stringify(s));
      const r = await s.ok.execute({
        tool_call_id: "c",
        enabled_tools: [{ name: "echo", description: "", kind: "function" }],
        source: "const r = await tools.echo({n: 1}); text(JSON.stringify(r))",
      });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.deepEqual(r.ok, {
        Result: { cell_id: "1", content_items: [{ type: "input_text", text: '{"echoed":{"n":1}}' }], error_text: null },
      });
    } finally {
      process.chdir(cwd);
      await provider.close();
    }
  });
});
