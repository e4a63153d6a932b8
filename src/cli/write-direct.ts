/**
 * Text straight to a descriptor (help, `--version`): under Bun, the first use of process.stdout
 * builds its stream objects, which costs a short command more than the rest of its work. A pipe
 * that is full (EAGAIN) gets the rest through the stream.
 */
import { writeSync } from "node:fs";

export function writeDirect(stream: NodeJS.WriteStream, fd: number, text: string): void {
  const bytes = Buffer.from(text);
  let done = 0;
  try {
    while (done < bytes.length) done += writeSync(fd, bytes, done);
  } catch {
    stream.write(bytes.subarray(done));
  }
}
