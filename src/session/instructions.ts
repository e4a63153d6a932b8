/** Base instructions (the system prompt) and per-session developer instructions. */
import * as prompts from "./prompts.generated.ts";

/** The system prompt of every session: prompts/base-instructions.md. */
export const BASE_INSTRUCTIONS = prompts.BASE_INSTRUCTIONS;

export interface EnvironmentContext {
  cwd: string;
  shell: string;
  approvalPolicy: string;
  sandboxMode: string;
  executor: string;
  date?: Date;
}

export function developerInstructions(env: EnvironmentContext, extra: string[] = []): string {
  const lines = [
    "## Environment",
    `- cwd: ${env.cwd}`,
    `- shell: ${env.shell}`,
    `- approval policy: ${env.approvalPolicy}`,
    `- sandbox: ${env.sandboxMode}`,
    `- executor: ${env.executor}`,
    `- date: ${(env.date ?? new Date()).toISOString().slice(0, 10)}`,
  ];
  return [lines.join("\n"), ...extra.filter(Boolean)].join("\n\n");
}
