import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function inftyCommand() {
  const infty = new Command("infty").description("long-running Solver/Director/Verifier runs with a durable run store");
  infty
    .command("run")
    .description("start a run for an objective")
    .argument("<objective>", "what the run must achieve")
    .action(() => notBuiltYet("relay infty run", 6));
  return infty;
}
