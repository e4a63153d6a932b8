/** memories/prompts.ts: the memory pipeline's prompts are exactly the pinned texts. */
import { describe, test } from "node:test";
import * as generated from "../../src/memories/prompts.generated.ts";
import { consolidationPrompt, readPathInstructions, STAGE1_SYSTEM, stage1Input } from "../../src/memories/prompts.ts";
import { AWKWARD, assertCovers, assertPinned } from "../support/prompt-pins.ts";

describe("memory prompts", () => {
  test("every prompt, filled with awkward values, is the pinned text", () => {
    assertPinned(
      {
        STAGE1_SYSTEM,
        stage1Input: stage1Input(`/rollouts/${AWKWARD}.jsonl`, `/work/${AWKWARD}`, `[{"text": "${AWKWARD}"}]`),
        consolidationPrompt: consolidationPrompt(`/home/${AWKWARD}/memories`, 7),
        readPathInstructions: readPathInstructions(`/home/${AWKWARD}/memories`, `## User Profile\n${AWKWARD}`),
      },
      {
        STAGE1_SYSTEM: "4e92ee2ba675d2d5",
        stage1Input: "e6659de4d1c80ff6",
        consolidationPrompt: "451b2ac7d07824de",
        readPathInstructions: "a8f172d724db7013",
      },
    );
  });

  test("the pins above cover every prompt file of the room", () => {
    assertCovers(generated, ["STAGE1_SYSTEM", "STAGE1_INPUT", "CONSOLIDATION", "READ_PATH"]);
  });
});
