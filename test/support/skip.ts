/** A skip reason that is also printed, so a skipped suite never passes silently in a runner that hides it. */
export function skipBecause(suite: string, reason: string | false | undefined): string | false {
  if (reason) process.stderr.write(`skipping ${suite}: ${reason}\n`);
  return reason || false;
}
