import { ExitCode, fail } from "./usage.ts";

/** For a subcommand whose capability has not landed yet: say so plainly instead of pretending. */
export function notBuiltYet(what: string, issue: number): never {
  fail(`${what} is not available in this build yet (tracked as issue ${issue}); see README.md for what works today`, ExitCode.Usage);
}
