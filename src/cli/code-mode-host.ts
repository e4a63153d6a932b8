/** `relay code-mode-host`: QuickJS code-mode sessions served over the framed protocol on stdio. */
import { Command } from "@commander-js/extra-typings";
import { serveCodeModeHostMain } from "./serve-code-mode-host.ts";

export function codeModeHostCommand() {
  return new Command("code-mode-host")
    .description("serve sandboxed JavaScript (QuickJS) sessions over the framed protocol on stdio (code mode)")
    .addHelpText(
      "after",
      `
Internal: relay starts this itself for \`relay run --code-mode\`; you rarely run it by hand.
It reads framed requests on stdin and writes framed responses on stdout; stderr is free text.

Methods (client -> host): codemode/hello, codemode/create_session, codemode/execute,
codemode/wait, codemode/terminate, codemode/shutdown_session.
Host -> client: codemode/invoke_tool and codemode/notify requests, codemode/initial_response
and codemode/cell_closed notifications. A script that ends or yields before it sends anything
is answered in one frame: the execute answer carries its first response (and closed: true).

Each cell runs in a fresh QuickJS runtime with a memory limit (default 64 MiB) and a CPU
budget (default 10 s); no imports, console, filesystem or network. The host exits when stdin
closes. A host binary can be pointed to with RELAY_CODE_MODE_HOST_PATH.`,
    )
    .action(() => serveCodeModeHostMain());
}
