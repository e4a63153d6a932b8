/**
 * `relay --version` (or `-V`) alone on the command line, answered by src/main.ts before the
 * command tree loads: scripts and health checks ask it often, and the tree (commander, the log,
 * the home directory) costs more than the answer. Any other use of the flag goes through
 * commander, which prints the same line.
 */
import { writeSync } from "node:fs";
import { VERSION } from "../version.ts";

export function printVersion(): void {
  const bytes = Buffer.from(`${VERSION}\n`);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(1, bytes, done);
  } catch {
    // A pipe that is full (EAGAIN) takes the rest through the stream.
    process.stdout.write(bytes.subarray(done));
  }
}
