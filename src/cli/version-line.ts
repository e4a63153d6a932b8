/**
 * `relay --version` (or `-V`) alone on the command line, answered by src/main.ts before the
 * command tree loads: scripts and health checks ask it often, and the tree (commander, the log,
 * the home directory) costs more than the answer. Any other use of the flag goes through
 * commander, which prints the same line. console.log, not a write to fd 1: under Bun it builds
 * no process.stdout, and node:fs, loaded for nothing else here, cost 250 more page faults (about
 * 1 ms) than the whole rest of the answer.
 */
import { VERSION } from "../version.ts";

export function printVersion(): void {
  console.log(VERSION);
}
