/**
 * `relay infty serve`: flags and the lines it prints. The server (and the page it embeds) is
 * loaded only when the command runs, so no other subcommand pays for it.
 */

import os from "node:os";
import path from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { relayHome } from "../../home/home.ts";
import type { FleetDb, FleetView } from "../../infty/fleet/index.ts";
import { RunStore } from "../../infty/run-store.ts";
import type { ActionHandler } from "../../infty/serve/server.ts";
import { ok, type Result } from "../../util/result.ts";
import { ExitCode, fail } from "../usage.ts";
import { wholeNumber } from "./flags.ts";
import { DB_HELP, fleetUrl, openFleet } from "./fleet.ts";

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
    .option(
      "--runs-root <dir>",
      "the folder holding the runs (default: $RELAY_INFTY_RUNS_ROOT, else $RELAY_HOME/infty)",
    )
    .option(
      "--db <url>",
      `also show a fleet: its runs, their workers and leases, and its workers; actions on its runs go through it (${DB_HELP})`,
    )
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
      const root = path.resolve(opts.runsRoot ?? RunStore.runsRoot(home));
      const { startServe } = await import("../../infty/serve/server.ts");
      const url = await fleetUrl(opts.db);
      const fleet = url ? (await openFleet(url)).fleet : undefined;
      const local = opts.allowActions ? await actionHandler(root) : undefined;
      const actions = local && fleet ? await fleetActions(fleet, local) : local;
      const r = await startServe({
        root,
        host: opts.host,
        port: opts.port,
        token: opts.token,
        actions,
        ...(fleet ? { fleet: await fleetView(fleet) } : {}),
      });
      if ("error" in r)
        fail(
          r.error.message,
          r.error.code === "port_in_use" || r.error.code === "bad_host" ? ExitCode.Usage : ExitCode.Failure,
        );
      const s = r.ok;
      process.stderr.write(`relay infty serve: runs in ${root}${fleet ? `; the fleet in ${fleet.location}` : ""}\n`);
      // A server on every address: the addresses people can actually open, not 0.0.0.0.
      for (const u of s.openUrls) process.stderr.write(`open ${u}\n`);
      if (s.token)
        process.stderr.write(
          `(the token sets a cookie and leaves the address; API clients send Authorization: Bearer ${s.token})\n`,
        );
      if (actions)
        process.stderr.write("actions are on: the page can stop and resume runs and send notes to the Director\n");
      const quit = () => void Promise.all([s.close(), fleet?.close()]).then(() => process.exit(ExitCode.Ok));
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

/** GET /api/fleet's answer: the fleet's runs and workers, read at each request. */
async function fleetView(fleet: FleetDb): Promise<() => Promise<Result<FleetView>>> {
  const { listRuns, listWorkers } = await import("../../infty/fleet/index.ts");
  return async () => {
    const [runs, workers] = await Promise.all([listRuns(fleet), listWorkers(fleet)]);
    if ("error" in runs) return runs;
    if ("error" in workers) return workers;
    return ok({ location: fleet.location, runs: runs.ok, workers: workers.ok });
  };
}

/** The page's actions with a fleet: stop and note go through the fleet DB, resume queues the run again; other runs are this host's. */
async function fleetActions(fleet: FleetDb, local: ActionHandler): Promise<ActionHandler> {
  const { requestNote, requestStop, requeueRun } = await import("../../infty/fleet/index.ts");
  const from = `relay infty serve on ${os.hostname()}`;
  return async (runId, action, body) => {
    const text = (body as { text?: unknown } | null)?.text;
    const asked =
      action === "stop"
        ? await requestStop(fleet, runId, from)
        : action === "resume"
          ? await requeueRun(fleet, runId, from)
          : action === "note" && typeof text === "string"
            ? await requestNote(fleet, runId, text, from)
            : ok(undefined);
    if ("error" in asked) return asked;
    return asked.ok ? ok({ action, message: asked.ok.message }) : local(runId, action, body);
  };
}
