import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function executorCommand() {
  return new Command("executor")
    .description("serve host-local tools (exec_command, write_stdin, file tools) over the framed protocol on stdio")
    .action(() => notBuiltYet("relay executor", 3));
}
