import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function memoriesCommand() {
  const memories = new Command("memories").description("the two-phase memory pipeline over session rollouts");
  memories
    .command("consolidate")
    .description("extract memories from recent rollouts and consolidate them into the memory folder")
    .action(() => notBuiltYet("relay memories consolidate", 7));
  return memories;
}
