/**
 * Writes the generated checks of the schemas relay parses on the hot path: for each module that
 * owns such schemas (its CHECKED_SCHEMAS), `<module>-checks.generated.ts` next to it, one
 * readable function per schema (scripts/validators/), formatted by Biome. The modules are
 * committed; test/util/validators.test.ts fails when one is not what this script writes now.
 *   bun scripts/build-validators.ts          (npm run build:validators)
 * A new owner starts from an empty module (`export {};`) at that path, so that it loads.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as rpcEcho from "../src/cli/rpc-echo.ts";
import * as config from "../src/config/config.ts";
import * as memories from "../src/config/memories.ts";
import * as codemode from "../src/contracts/code-mode.ts";
import * as envelope from "../src/contracts/envelope.ts";
import * as execTools from "../src/contracts/exec-tools.ts";
import * as executor from "../src/contracts/executor.ts";
import * as mcp from "../src/contracts/mcp-bridge.ts";
import * as projectDocs from "../src/contracts/project-docs.ts";
import * as skills from "../src/contracts/skills.ts";
import * as chat from "../src/model/chat.ts";
import * as items from "../src/model/items.ts";
import * as responses from "../src/model/responses.ts";
import * as rollout from "../src/rollout/schema.ts";
import * as cases from "../test/util/fast-parse-cases.ts";
import { checksModulePath, checksModuleSource, checksModuleText, type Owner } from "./validators/module.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Every module whose CHECKED_SCHEMAS get generated checks; the last is test/util's own cases. */
export const OWNERS: Owner[] = [
  { file: "src/cli/rpc-echo.ts", schemas: rpcEcho.CHECKED_SCHEMAS },
  { file: "src/contracts/code-mode.ts", schemas: codemode.CHECKED_SCHEMAS },
  { file: "src/contracts/exec-tools.ts", schemas: execTools.CHECKED_SCHEMAS },
  { file: "src/contracts/mcp-bridge.ts", schemas: mcp.CHECKED_SCHEMAS },
  { file: "src/contracts/project-docs.ts", schemas: projectDocs.CHECKED_SCHEMAS },
  { file: "src/contracts/executor.ts", schemas: executor.CHECKED_SCHEMAS },
  { file: "src/contracts/skills.ts", schemas: skills.CHECKED_SCHEMAS },
  { file: "src/model/chat.ts", schemas: chat.CHECKED_SCHEMAS },
  { file: "src/model/items.ts", schemas: items.CHECKED_SCHEMAS },
  { file: "src/model/responses.ts", schemas: responses.CHECKED_SCHEMAS },
  { file: "src/contracts/envelope.ts", schemas: envelope.CHECKED_SCHEMAS },
  { file: "src/rollout/schema.ts", schemas: rollout.CHECKED_SCHEMAS },
  { file: "src/config/config.ts", schemas: config.CHECKED_SCHEMAS, keyTrees: config.KEY_TREES },
  { file: "src/config/memories.ts", schemas: memories.CHECKED_SCHEMAS, keyTrees: memories.KEY_TREES },
  { file: "test/util/fast-parse-cases.ts", schemas: cases.CHECKED_SCHEMAS },
];

/** Each generated module's path (from the repository root) and the text it must hold now (Biome formats it). */
export function validatorsSources(): Array<{ file: string; text: string }> {
  return OWNERS.map((owner) => ({ file: checksModulePath(owner.file), text: checksModuleSource(owner, ROOT) }));
}

/** Each generated module's path and its text before formatting (what the staleness test compares, formatting aside). */
export function validatorsTexts(): Array<{ file: string; text: string }> {
  return OWNERS.map((owner) => ({ file: checksModulePath(owner.file), text: checksModuleText(owner, ROOT) }));
}

if (import.meta.main) {
  for (const { file, text } of validatorsSources()) {
    writeFileSync(path.join(ROOT, file), text);
    process.stdout.write(`wrote ${file} (${(text.length / 1024).toFixed(1)} KiB, ${text.split("\n").length} lines)\n`);
  }
}
