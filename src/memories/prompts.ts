/**
 * Prompts of the memory pipeline (Relay's own wording). Their text is in prompts/*.md, embedded
 * by prompts.generated.ts (npm run build:prompts writes it); the functions fill in their values.
 */
import { fillPrompt } from "../util/prompt-template.ts";
import * as prompts from "./prompts.generated.ts";

/** Phase 1's system prompt: one rollout in, one JSON memory out. */
export const STAGE1_SYSTEM = prompts.STAGE1_SYSTEM;

/** Phase 1's input: the rollout, rendered. */
export function stage1Input(rolloutPath: string, cwd: string, conversationJson: string): string {
  return fillPrompt(prompts.STAGE1_INPUT, {
    rollout_path: rolloutPath,
    rollout_cwd: cwd,
    conversation: conversationJson,
  });
}

/** Phase 2's task for its agent session, run in the memory folder. */
export function consolidationPrompt(root: string, inputCount: number): string {
  return fillPrompt(prompts.CONSOLIDATION, { root, input_count: inputCount });
}

/** What a session is told about the memory folder, with the summary loaded. */
export function readPathInstructions(root: string, summary: string): string {
  return fillPrompt(prompts.READ_PATH, { root, summary });
}
