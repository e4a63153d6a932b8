/**
 * `relay infty serve`: flags and the lines it prints. The server (and the page it embeds) is
 * loaded only when the command runs, so no other subcommand pays for it.
 */

import path from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { relayHome } from "../../home/home.ts";
import { ExitCode, fail } from "../usage.ts";
import { wholeNumber } from "./flags.ts";

export function addServe(infty: Command) {
  infty
    .command("serve")
    .description("serve a live view of the runs (a page and a JSON API) over HTTP; read-only unless --allow-actions")
    .option("--port <n>", "port to listen on (0: any free port)", wholeNumber("--port", 0, 65535), 7788)
    .option(
      "--host <address>",
      "address to bind (with 0.0.0.0 or :: the addresses to open are printed, one a line); anything but loopback needs a token (one is made and printed if --token is not given)",
      "127.0.0.1",
    )
    .option("--runs-root <dir>", "the folder holding the runs (default: $RELAY_HOME/infty)")
    .option(
      "--token <token>",
      "the token requests must carry (Authorization: Bearer, or the cookie the printed URL sets)",
    )
    .option(
      "--allow-actions",
      "let the page stop and resume runs and send notes to the Director (POST, token required even on loopback)",
    )
    .addHelpText(
      "after",
      `
On a remote machine, keep the default 127.0.0.1 and tunnel:
  ssh -L 7788:127.0.0.1:7788 host      then open http://127.0.0.1:7788
API: GET /api/runs, /api/runs/<id>, /api/runs/<id>/events (SSE with Accept: text/event-stream,
else JSON pages ?from=N&limit=M), /api/runs/<id>/files[/<path>], /api/runs/<id>/checkpoints.`,
    )
    .action(async (opts) => {
      const home = relayHome();
      const root = path.resolve(opts.runsRoot ?? path.join(home, "infty"));
      const { startServe } = await import("../../infty/serve/server.ts");
      const actions = opts.allowActions ? await actionHandler(root) : undefined;
      const r = await startServe({ root, host: opts.host, port: opts.port, token: opts.token, actions });
      if ("error" in r)
        fail(
          r.error.message,
          r.error.code === "port_in_use" || r.error.code === "bad_host" ? ExitCode.Usage : ExitCode.Failure,
        );
      const s = r.ok;
      process.stderr.write(`relay infty serve: runs in ${root}\n`);
      // A server on every address: the addresses people can actually open, not 0.0.0.0.
      for (const u of s.openUrls) process.stderr.write(`open ${u}\n`);
      if (s.token)
        process.stderr.write(
          `(the token sets a cookie and leaves the address; API clients send Authorization: Bearer ${s.token})\n`,
        );
      if (actions)
        process.stderr.write("actions are on: the page can stop and resume runs and send notes to the Director\n");
      const quit = () => void s.close().then(() => process.exit(ExitCode.Ok));
      process.on("SIGINT", quit);
      process.on("SIGTERM", quit);
    });
}

async function actionHandler(root: string) {
  const { serveActions } = await import("../../infty/serve/actions.ts");
  const r = serveActions(root);
  if ("error" in r) fail(r.error.message, ExitCode.Usage);
  return r.ok;
}
