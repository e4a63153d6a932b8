import { Command } from "@commander-js/extra-typings";
import { notBuiltYet } from "./unbuilt.ts";

export function codeModeHostCommand() {
  return new Command("code-mode-host")
    .description("serve sandboxed JavaScript (QuickJS) sessions over the framed protocol on stdio (code mode)")
    .action(() => notBuiltYet("relay code-mode-host", 5));
}
