/**
 * Role prompts, shipped inside the binary. Their text is in prompts/*.md, embedded by
 * prompts.generated.ts (npm run build:prompts writes it); the functions fill in their values.
 */
import { fillPrompt } from "../util/prompt-template.ts";
import * as prompts from "./prompts.generated.ts";

export const SOLVER_PROMPT = prompts.SOLVER;
export const DIRECTOR_PROMPT = prompts.DIRECTOR;
export const VERIFIER_PROMPT = prompts.VERIFIER;
export const FINALIZATION_PROMPT = prompts.FINALIZATION;

/** The same, for a run on a repository: the deliverable is a commit of the run's branch. */
export const REPO_FINALIZATION_PROMPT = prompts.REPO_FINALIZATION;

/** What a Verifier does in the final round. */
export const FINAL_CHECK = prompts.FINAL_CHECK;

/** The same, for a run on a repository. */
export const REPO_FINAL_CHECK = prompts.REPO_FINAL_CHECK;

/** To a Solver whose deliverable failed the final round. */
export const REDELIVER_PROMPT = prompts.REDELIVER;

export function objectiveMessage(objective: string): string {
  return fillPrompt(prompts.OBJECTIVE, { objective });
}

/** To a Solver whose turn ended without a usable signal (and without a question to forward). */
export function solverCorrective(problem: string, shape: string): string {
  return fillPrompt(prompts.SOLVER_CORRECTIVE, { problem, shape });
}

/** To a Director or Verifier whose reply could not be used. */
export function correctiveRetry(problem: string, shape: string): string {
  return fillPrompt(prompts.CORRECTIVE_RETRY, { problem, shape });
}

/** The direction request made of a Solver turn that asked something in prose. */
export function proseQuestion(message: string): string {
  return fillPrompt(prompts.PROSE_QUESTION, { message });
}
