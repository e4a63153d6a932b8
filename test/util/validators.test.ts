/**
 * The generated checks (scripts/build-validators.ts): every committed `*-checks.generated.ts` is
 * what the generator writes now, none is left over, and every schema src/ hands to fastParse has
 * a check filed for it. test/util/fast-parse.test.ts compares what the checks decide with zod.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import type { z } from "zod";
import { OWNERS, validatorsTexts } from "../../scripts/build-validators.ts";
import { checkedWithoutSchema, checksModulePath, withoutFormatting } from "../../scripts/validators/module.ts";
import * as rpcEcho from "../../src/cli/rpc-echo.ts";
import { RelayConfigSchema } from "../../src/config/config.ts";
import { MemorySettingsSchema } from "../../src/config/memories.ts";
import * as codemode from "../../src/contracts/code-mode.ts";
import { ResultValueSchema } from "../../src/contracts/envelope.ts";
import { ExecCommandArgsSchema, WriteStdinArgsSchema } from "../../src/contracts/exec-tools.ts";
import * as executor from "../../src/contracts/executor.ts";
import * as mcp from "../../src/contracts/mcp-bridge.ts";
import * as projectDocs from "../../src/contracts/project-docs.ts";
import * as skills from "../../src/contracts/skills.ts";
import { ChunkSchema } from "../../src/model/chat.ts";
import { ResponseItemSchema } from "../../src/model/items.ts";
import { StreamEventSchema } from "../../src/model/responses.ts";
import * as rollout from "../../src/rollout/schema.ts";
import { generatedCheck } from "../../src/util/fast-parse.ts";
import { REPO_ROOT as ROOT } from "../support/paths.ts";

/** The files under `dir` (from the repository root) whose path ends with `suffix`. */
function filesEnding(dir: string, suffix: string): string[] {
  return (readdirSync(path.join(ROOT, dir), { recursive: true }) as string[])
    .filter((f) => f.endsWith(suffix))
    .map((f) => path.join(dir, f).split(path.sep).join("/"));
}

/** Every method and notification spec a module exports, at any depth of its plain objects. */
function specsOf(mod: Record<string, unknown>): Array<{ name: string; params: z.ZodType; result?: z.ZodType }> {
  const found: Array<{ name: string; params: z.ZodType; result?: z.ZodType }> = [];
  const visit = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== "object" || depth > 2) return;
    // A spec is a plain object; a schema (a lazy stand-in included) is not looked into.
    if (Object.getPrototypeOf(v) !== Object.prototype) return;
    const spec = v as { name?: unknown; params?: z.ZodType; result?: z.ZodType };
    if (typeof spec.name === "string" && spec.params !== undefined) found.push(spec as (typeof found)[number]);
    else for (const inner of Object.values(v)) visit(inner, depth + 1);
  };
  for (const v of Object.values(mod)) visit(v, 0);
  return found;
}

describe("generated validators", () => {
  test("every *-checks.generated.ts is what npm run build:validators writes now (formatting aside)", () => {
    for (const { file, text } of validatorsTexts())
      assert.ok(
        withoutFormatting(readFileSync(path.join(ROOT, file), "utf8")) === withoutFormatting(text),
        `${file} is stale: run npm run build:validators and commit it`,
      );
    const code = 'const  a = { k: "x  y" ,\n};';
    assert.equal(withoutFormatting(code), 'consta={k:"x  y"};', "spaces inside strings count, outside do not");
  });

  test("src's checks decide without reading their schema (which builds a lazy one), but for these known parts", () => {
    // A check that reads its schema builds all of it on the first value it meets: a refinement
    // by an inline function did so for every first exec request and every relay run's config.
    const reading = OWNERS.filter((o) => o.file.startsWith("src/")).flatMap((o) =>
      Object.entries(o.schemas)
        .filter(([, schema]) => !checkedWithoutSchema(schema))
        .map(([name]) => `${o.file}: ${name}`),
    );
    assert.deepEqual(reading, [
      // a resumed rollout's lines: each payload is a union left to zod
      "src/rollout/schema.ts: sessionMetaLine",
      "src/rollout/schema.ts: compactedLine",
      // approval_rules and environments, when config.toml has them
      "src/config/config.ts: relayConfig",
    ]);
  });

  test("no checks module is left over from an owner that is gone", () => {
    const written = new Set(OWNERS.map((o) => checksModulePath(o.file)));
    const found = [...filesEnding("src", "-checks.generated.ts"), ...filesEnding("test", "-checks.generated.ts")];
    assert.deepEqual(
      found.filter((f) => !written.has(f)),
      [],
    );
  });

  test("every fastParse call in src/ is one this test knows", () => {
    const calls: string[] = [];
    for (const file of filesEnding("src", ".ts")) {
      if (file.endsWith(".generated.ts") || file === "src/util/fast-parse.ts") continue;
      for (const m of readFileSync(path.join(ROOT, file), "utf8").matchAll(/\bfastParse(?:OrThrow)?\(([^,]+),/g))
        calls.push(`${file}: ${m[1]}`);
    }
    // A new call: file its schema's check (the owner's CHECKED_SCHEMAS) and add the call here.
    assert.deepEqual(calls.sort(), [
      "src/config/config.ts: RelayConfigSchema",
      "src/config/config.ts: RelayConfigSchema",
      "src/config/config.ts: RelayConfigSchema",
      "src/config/memories.ts: MemorySettingsSchema",
      "src/config/memories.ts: MemorySettingsSchema",
      "src/model/chat.ts: ChunkSchema",
      "src/model/responses.ts: ResponseItemSchema",
      "src/model/responses.ts: StreamEventSchema",
      "src/protocol/handler-table.ts: h.spec.params",
      "src/protocol/handler-table.ts: h.spec.params",
      "src/protocol/pending-calls.ts: p.result",
      "src/protocol/response.ts: ResultValueSchema",
      "src/rollout/schema.ts: KNOWN_SCHEMAS[type]",
      "src/rollout/schema.ts: UnknownLineSchema",
      "src/session/tool-router.ts: ExecCommandArgsSchema",
      "src/session/tool-router.ts: WriteStdinArgsSchema",
    ]);
  });

  test("every schema those calls can be given has a generated check", () => {
    const named: z.ZodType[] = [ChunkSchema, StreamEventSchema, ResponseItemSchema, ResultValueSchema];
    named.push(ExecCommandArgsSchema, WriteStdinArgsSchema, rollout.UnknownLineSchema);
    named.push(RelayConfigSchema, MemorySettingsSchema);
    named.push(rollout.SessionMetaLineSchema, rollout.ResponseItemLineSchema, rollout.EventMsgLineSchema);
    named.push(rollout.TurnContextLineSchema, rollout.CompactedLineSchema);
    for (const schema of named) assert.ok(generatedCheck(schema), "a schema fastParse is called with has no check");
    // The peers' calls get any method or notification src/ defines: every module that defines one is here.
    const modules = { rpcEcho, codemode, executor, mcp, skills, projectDocs };
    const defining = filesEnding("src", ".ts").filter(
      (f) =>
        f !== "src/contracts/method.ts" &&
        /\bdefine(Method|Notification)\(/.test(readFileSync(path.join(ROOT, f), "utf8")),
    );
    assert.equal(defining.length, Object.keys(modules).length, `modules defining specs: ${defining.join(", ")}`);
    let specs = 0;
    for (const mod of Object.values(modules))
      for (const spec of specsOf(mod as Record<string, unknown>)) {
        specs++;
        assert.ok(generatedCheck(spec.params), `${spec.name} params have no generated check`);
        if (spec.result) assert.ok(generatedCheck(spec.result), `${spec.name} result has no generated check`);
      }
    assert.ok(specs > 30, `only ${specs} specs found`);
  });

  test("the owners' CHECKED_SCHEMAS are all filed, and the generator reads them from the modules it names", () => {
    for (const owner of OWNERS)
      for (const [name, schema] of Object.entries(owner.schemas))
        assert.ok(generatedCheck(schema), `${owner.file}: ${name} has no generated check`);
  });
});
