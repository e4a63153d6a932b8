/**
 * Text straight to a descriptor (help, `--version`): under Bun, the first use of process.stdout
 * builds its stream objects, which costs a short command more than the rest of its work (even
 * naming `process.stdout` as an argument builds them, so the stream is only looked up when it is
 * needed). A pipe that is full (EAGAIN) gets the rest through the stream.
 */
import { writeSync } from "node:fs";

export function writeDirect(fd: 1 | 2, text: string): void {
  const bytes = Buffer.from(text);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(fd, bytes, done);
  } catch {
    (fd === 1 ? process.stdout : process.stderr).write(bytes.subarray(done));
  }
}
