import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InProcessProvider } from "../../src/codemode/in-process-provider.ts";
import { parseToolArguments } from "../../src/contracts/tool-args.ts";
import { CodeModeTools } from "../../src/session/code-mode.ts";

describe("function-tool arguments", () => {
  test("empty text is {}, JSON is parsed, anything else is a clear error", () => {
    assert.deepEqual(parseToolArguments(""), { ok: {} });
    assert.deepEqual(parseToolArguments("  \n"), { ok: {} });
    assert.deepEqual(parseToolArguments('{"cell_id": "1"}'), { ok: { cell_id: "1" } });
    const bad = parseToolArguments("{cell_id: 1");
    assert.ok("error" in bad);
    assert.match(bad.error.message, /^failed to parse function arguments: /);
  });

  test("code mode's wait: bad JSON, bad fields and an unknown cell are answers the model can read", async () => {
    const tools = new CodeModeTools(
      { specs: [], call: async () => ({ output: "", success: true, display: "" }) },
      new InProcessProvider(),
    );
    const badJson = await tools.wait("{cell_id:");
    assert.equal(badJson.success, false);
    assert.match(badJson.output, /^failed to parse function arguments: /);
    const badField = await tools.wait('{"cell_id": 7}');
    assert.equal(badField.success, false);
    assert.match(badField.output, /^The wait tool was called with invalid arguments: .*cell_id/s);
    const unknown = await tools.wait('{"cell_id": "9"}');
    assert.equal(unknown.success, false);
    assert.match(unknown.output, /^Script failed\n[\s\S]*exec cell 9 not found/);
    await tools.close();
  });
});
