/** The first and last records of a command in relay's log (program.ts, and servers started directly). */
import { Log } from "../util/log.ts";
import { currentRuntime } from "../util/runtime.ts";
import { VERSION } from "../version.ts";

const log = Log.create("cli");

/** Logs that `command` (e.g. "memories consolidate") starts, and how long it ran once the process exits. */
export function logCommandStart(command: string): void {
  const started = performance.now();
  log.info("start", { command, version: VERSION, runtime: currentRuntime(), cwd: process.cwd() });
  process.once("exit", (code) => log.debug("exit", { command, code, ms: Math.round(performance.now() - started) }));
}
