/** executor/tool-schemas.ts: the generated JSON Schemas are what converting the zod schemas gives now. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { ExecCommandArgsSchema } from "../../src/contracts/exec-tools.ts";
import { fileTools } from "../../src/executor/file-tools.ts";
import { toolSpecs } from "../../src/executor/server.ts";
import { defineTool } from "../../src/executor/tool.ts";
import { BUILTIN_TOOL_SCHEMAS } from "../../src/executor/tool-schemas.generated.ts";
import { argumentsJsonSchema, convertBuiltinToolSchemas } from "../../src/executor/tool-schemas.ts";

describe("built-in tool schemas", () => {
  test("tool-schemas.generated.ts is up to date (else: npm run build:tool-schemas)", () => {
    assert.deepEqual(
      BUILTIN_TOOL_SCHEMAS,
      convertBuiltinToolSchemas(),
      "src/executor/tool-schemas.generated.ts is stale: run npm run build:tool-schemas and commit it",
    );
  });

  test("tools/list advertises every built-in tool with its converted schema", () => {
    const specs = toolSpecs(fileTools);
    assert.deepEqual(
      specs.map((s) => s.name),
      ["exec_command", "write_stdin", ...fileTools.map((t) => t.name)],
    );
    assert.deepEqual(specs[0]!.input_schema, argumentsJsonSchema(ExecCommandArgsSchema));
    for (const t of fileTools)
      assert.deepEqual(specs.find((s) => s.name === t.name)!.input_schema, argumentsJsonSchema(t.parameters), t.name);
  });

  test("a tool that is not the built-in one is converted, even under a built-in's name; callers cannot change the generated schemas", () => {
    const own = defineTool({
      name: fileTools[0]!.name,
      description: "a test's own tool",
      parameters: z.object({ only: z.number() }),
      readOnly: true,
      execute: async () => ({ ok: { text: "" } }),
    });
    const spec = toolSpecs([own]).find((s) => s.name === own.name)!;
    assert.deepEqual(spec.input_schema, argumentsJsonSchema(own.parameters));
    const first = toolSpecs(fileTools)[0]!;
    (first.input_schema as { type?: string }).type = "changed";
    assert.equal(toolSpecs(fileTools)[0]!.input_schema.type, "object");
  });
});
