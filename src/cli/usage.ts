/** Exit codes scripts can rely on, and the one place that prints a fatal error. */
export const ExitCode = {
  Ok: 0,
  /** The work ran and failed (a tool, a model, a verification). */
  Failure: 1,
  /** Bad usage: unknown command or flag, invalid value, broken config. */
  Usage: 2,
  /** Interrupted by the user (Ctrl-C); state is saved and resumable. */
  Interrupted: 130,
} as const;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export function fail(message: string, code: number = ExitCode.Failure): never {
  process.stderr.write(`relay: ${message}\n`);
  process.exit(code);
}

/** `relay: warning: …` on stderr for each. */
export function warn(warnings: readonly string[]): void {
  for (const w of warnings) process.stderr.write(`relay: warning: ${w}\n`);
}
