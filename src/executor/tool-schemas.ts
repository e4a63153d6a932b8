/**
 * The JSON Schemas of the executor's built-in tools, as tools/list advertises them. Converting
 * the zod schemas (z.toJSONSchema) costs a fresh executor 7–11 ms on the path to a session's
 * first model request, so the result is generated ahead (scripts/build-tool-schemas.ts writes
 * tool-schemas.generated.ts); test/executor/tool-schemas.test.ts fails when that file is stale.
 */
import { z } from "zod";
import { ExecCommandArgsSchema, WriteStdinArgsSchema } from "../contracts/exec-tools.ts";
import { fileTools } from "./file-tools.ts";
import type { ExecutorTool } from "./tool.ts";
import { BUILTIN_TOOL_SCHEMAS } from "./tool-schemas.generated.ts";

export type JsonSchema = Record<string, unknown>;

/** A zod schema as the JSON Schema of a tool's arguments (what the model may send). */
export function argumentsJsonSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { io: "input" }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** What tool-schemas.generated.ts must hold: every built-in tool's schema, converted now. */
export function convertBuiltinToolSchemas(): Record<string, JsonSchema> {
  return {
    exec_command: argumentsJsonSchema(ExecCommandArgsSchema),
    write_stdin: argumentsJsonSchema(WriteStdinArgsSchema),
    ...Object.fromEntries(fileTools.map((t) => [t.name, argumentsJsonSchema(t.parameters)])),
  };
}

/** exec_command's or write_stdin's schema. */
export function execToolSchema(name: "exec_command" | "write_stdin"): JsonSchema {
  return structuredClone(BUILTIN_TOOL_SCHEMAS[name]!);
}

/** A tool's schema: the generated one for a built-in tool, converted for any other (tests' own tools). */
export function toolJsonSchema(tool: ExecutorTool): JsonSchema {
  const generated = fileTools.includes(tool) ? BUILTIN_TOOL_SCHEMAS[tool.name] : undefined;
  return generated ? structuredClone(generated) : argumentsJsonSchema(tool.parameters);
}
