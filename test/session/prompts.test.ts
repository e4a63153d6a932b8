/** The model-facing texts of session/ (base instructions, compaction, code mode's tools) and capabilities/ (the skill tool and catalog), exactly as pinned. */
import { describe, test } from "node:test";
import * as capabilityPrompts from "../../src/capabilities/prompts.generated.ts";
import { skillsCatalog } from "../../src/capabilities/skill-catalog.ts";
import { SKILL_TOOL_SPEC } from "../../src/capabilities/skill-tool.ts";
import { codeModeModelTools } from "../../src/session/code-mode.ts";
import { COMPACT_PROMPT, SUMMARY_PREFIX } from "../../src/session/compaction.ts";
import { BASE_INSTRUCTIONS } from "../../src/session/instructions.ts";
import * as generated from "../../src/session/prompts.generated.ts";
import { assertCovers, assertPinned } from "../support/prompt-pins.ts";

describe("session prompts", () => {
  test("every text is the pinned one", () => {
    const [exec, wait] = codeModeModelTools();
    const skill = {
      name: "deploy",
      description: "How to deploy this service",
      path: "/skills/deploy/SKILL.md",
      hidden: false,
      source: { kind: "local" as const, dir: "home" as const, root: "/skills" },
    };
    assertPinned(
      {
        BASE_INSTRUCTIONS,
        COMPACT_PROMPT,
        SUMMARY_PREFIX,
        exec: exec!.description,
        wait: wait!.description,
        skill: SKILL_TOOL_SPEC.description,
        skillsCatalog: skillsCatalog([skill]).text,
      },
      {
        BASE_INSTRUCTIONS: "505ff11d48dc3285",
        COMPACT_PROMPT: "52b4c94a51d5380f",
        SUMMARY_PREFIX: "8077a2227110cda9",
        exec: "75291150db82c9db",
        wait: "0dea81465d49e909",
        skill: "11085d9e3122e86e",
        skillsCatalog: "570362682bdd27fc",
      },
    );
  });

  test("the pins above cover every prompt file of both rooms", () => {
    assertCovers(generated, ["BASE_INSTRUCTIONS", "COMPACT", "SUMMARY_PREFIX", "CODE_MODE_EXEC", "CODE_MODE_WAIT"]);
    assertCovers(capabilityPrompts, ["SKILL_TOOL", "SKILLS_CATALOG"]);
  });
});
