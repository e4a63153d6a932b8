/**
 * `relay --version` (or `-V`) alone on the command line, answered by src/main.ts before the
 * command tree loads: scripts and health checks ask it often, and the tree (commander, the log,
 * the home directory) costs more than the answer. Any other use of the flag goes through
 * commander, which prints the same line.
 */
import { VERSION } from "../version.ts";
import { writeDirect } from "./write-direct.ts";

export function printVersion(): void {
  writeDirect(process.stdout, 1, `${VERSION}\n`);
}
