/** `relay infty stop` and `relay infty note`: acting on a run from another terminal (infty/operator.ts does the work). */
import type { Command } from "@commander-js/extra-typings";
import { relayHome } from "../../home/home.ts";
import { noteForDirector, stopRun } from "../../infty/operator.ts";
import type { Result } from "../../util/result.ts";
import { ExitCode, fail } from "../usage.ts";
import { askFleet, DB_HELP } from "./fleet.ts";
import { RUN_ARG_HELP, runArg } from "./run-arg.ts";

function report(r: Result<{ message: string }>): void {
  if ("error" in r)
    fail(
      r.error.message,
      r.error.code === "run_not_found" || r.error.code === "bad_request" || r.error.code.startsWith("invalid")
        ? ExitCode.Usage
        : ExitCode.Failure,
    );
  process.stdout.write(`${r.ok.message}\n`);
}

export function addStop(infty: Command) {
  infty
    .command("stop")
    .description("stop a live run after its current step, as Ctrl-C where it runs would (it stays resumable)")
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--db <url>", `a fleet's run, from any machine: ${DB_HELP}`)
    .action(async (ref, opts) => {
      const asked = await askFleet(opts.db, ref, async (fleet, id, from) =>
        (await import("../../infty/fleet/index.ts")).requestStop(fleet, id, `relay infty stop by ${from}`),
      );
      report(asked ?? (await stopRun(relayHome(), await runArg(ref), "relay infty stop")));
    });
}

export function addNote(infty: Command) {
  infty
    .command("note")
    .description("leave a note for a run's Director; it is sent with the Director's next direction request")
    .argument("<run-id>", RUN_ARG_HELP)
    .argument("<text>", "the note")
    .option("--db <url>", `a fleet's run, from any machine: ${DB_HELP}`)
    .action(async (ref, text, opts) => {
      const asked = await askFleet(opts.db, ref, async (fleet, id, from) =>
        (await import("../../infty/fleet/index.ts")).requestNote(fleet, id, text, `relay infty note by ${from}`),
      );
      report(asked ?? (await noteForDirector(relayHome(), await runArg(ref), text, "relay infty note")));
    });
}
