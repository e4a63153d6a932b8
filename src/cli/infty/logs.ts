/** `relay infty logs`: a run's events.jsonl as lines (or raw JSON), its tail, and --follow. */

import path from "node:path";
import type { Command } from "@commander-js/extra-typings";
import { runLiveness } from "../../infty/liveness.ts";
import { followLines, tailLines } from "../../infty/log-tail.ts";
import { readRunMeta } from "../../infty/run-format.ts";
import type { RunStore } from "../../infty/run-store.ts";
import { wholeNumber } from "./flags.ts";
import { loadRun, RUN_ARG_HELP } from "./run-arg.ts";

/** One event as a line: time, type, then its fields (texts on one line, cut). */
export function eventLine(line: string): string {
  try {
    const { at, type, ...rest } = JSON.parse(line) as Record<string, unknown>;
    return `${at} ${type} ${Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === "string" ? v.replace(/\n/g, " ").slice(0, 160) : JSON.stringify(v)}`)
      .join(" ")}`;
  } catch {
    return `(unreadable line) ${line.slice(0, 160)}`;
  }
}

const finished = (line: string) => line.includes('"type":"run_finished"');

/** Why following should stop: the run is not driven (any more). */
async function notDriven(store: RunStore): Promise<string | undefined> {
  const now = await readRunMeta(store.dir);
  const state = "ok" in now ? now.ok : store.state;
  const l = await runLiveness(store.dir, state);
  if (l.live) return undefined;
  return l.stale
    ? `run ${store.id} is not driven any more (${l.stale})`
    : `run ${store.id} is ${state.status}, not running`;
}

export function addLogs(infty: Command) {
  infty
    .command("logs")
    .description("print a run's event log (events.jsonl); --follow keeps printing new events until the run finishes")
    .argument("<run-id>", RUN_ARG_HELP)
    .option("--json", "print the raw JSON lines")
    .option("-n, --lines <n>", "only the last N events (read from the end of the log)", wholeNumber("--lines"))
    .option("-f, --follow", "then print each new event as it comes, until the run finishes or stops (Ctrl-C to quit)")
    .action(async (ref, opts) => {
      const store = await loadRun(ref);
      const file = path.join(store.dir, "events.jsonl");
      const print = (line: string) => process.stdout.write(`${opts.json ? line : eventLine(line)}\n`);
      const { lines, end } = await tailLines(file, opts.lines ?? Infinity);
      for (const line of lines) print(line);
      if (!opts.follow) return;
      const idle = await notDriven(store);
      if (idle) {
        process.stderr.write(`relay: ${idle}; nothing to follow\n`);
        return;
      }
      const why = await followLines(file, { from: end, onLine: print, last: finished, idle: () => notDriven(store) });
      process.stderr.write(`relay: ${why}; no more events to follow\n`);
    });
}
