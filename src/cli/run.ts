import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function runCommand() {
  return new Command("run")
    .description("run one agent session for a prompt")
    .argument("<prompt>", "what the agent should do")
    .action(() => notBuiltYet("relay run", 4));
}
