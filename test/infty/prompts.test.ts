/** infty/prompts.ts: the role prompts and the messages to roles are exactly the pinned texts. */
import { describe, test } from "node:test";
import * as generated from "../../src/infty/prompts.generated.ts";
import {
  correctiveRetry,
  DIRECTOR_PROMPT,
  FINAL_CHECK,
  FINALIZATION_PROMPT,
  objectiveMessage,
  proseQuestion,
  REDELIVER_PROMPT,
  REPO_FINAL_CHECK,
  REPO_FINALIZATION_PROMPT,
  SOLVER_PROMPT,
  solverCorrective,
  VERIFIER_PROMPT,
} from "../../src/infty/prompts.ts";
import { AWKWARD, assertCovers, assertPinned } from "../support/prompt-pins.ts";

describe("infty prompts", () => {
  test("every prompt, filled with awkward values, is the pinned text", () => {
    assertPinned(
      {
        SOLVER_PROMPT,
        DIRECTOR_PROMPT,
        VERIFIER_PROMPT,
        FINALIZATION_PROMPT,
        REPO_FINALIZATION_PROMPT,
        FINAL_CHECK,
        REPO_FINAL_CHECK,
        REDELIVER_PROMPT,
        objectiveMessage: objectiveMessage(AWKWARD),
        solverCorrective: solverCorrective(`problem ${AWKWARD}`, `shape ${AWKWARD}`),
        correctiveRetry: correctiveRetry(`problem ${AWKWARD}`, `shape ${AWKWARD}`),
        proseQuestion: proseQuestion(AWKWARD),
      },
      {
        SOLVER_PROMPT: "778e2faf54bbf9c0",
        DIRECTOR_PROMPT: "7d37b0d4f4caf427",
        VERIFIER_PROMPT: "5b0452bb92ac8db8",
        FINALIZATION_PROMPT: "3a7aa1d08bc17946",
        REPO_FINALIZATION_PROMPT: "7f9b943fdd446008",
        FINAL_CHECK: "8615fdc6b3e894d9",
        REPO_FINAL_CHECK: "e05231579d78aec0",
        REDELIVER_PROMPT: "abaac1038182298a",
        objectiveMessage: "49ba62c57d9ca5fe",
        solverCorrective: "72d8292656a24bf6",
        correctiveRetry: "e74f82701b0239a0",
        proseQuestion: "8fab70ddea9b589e",
      },
    );
  });

  test("the pins above cover every prompt file of the room", () => {
    assertCovers(generated, [
      "SOLVER",
      "DIRECTOR",
      "VERIFIER",
      "FINALIZATION",
      "REPO_FINALIZATION",
      "FINAL_CHECK",
      "REPO_FINAL_CHECK",
      "REDELIVER",
      "OBJECTIVE",
      "SOLVER_CORRECTIVE",
      "CORRECTIVE_RETRY",
      "PROSE_QUESTION",
    ]);
  });
});
