/**
 * Splits a user command line such as `ssh host 'relay executor'` into argv with the shell
 * parser approval uses (POSIX quoting and backslashes), without running a shell. What would
 * need a shell (expansions, `;`, `|`, redirections, VAR=value) is refused with the fix.
 */

import { err, ok, type Result } from "../util/result.ts";
import { parseShell, ShellParseError } from "../util/shell-parse.ts";

export function splitCommandLine(line: string): Result<string[], "invalid_command_line"> {
  let script;
  try {
    script = parseShell(line);
  } catch (e) {
    if (!(e instanceof ShellParseError)) throw e;
    return err("invalid_command_line", `cannot split the command line \`${line}\`: ${e.message}`);
  }
  const [cmd, ...more] = script.commands;
  if (!cmd) return err("invalid_command_line", "the command line is empty");
  if (more.length || cmd.type !== "simple" || cmd.redirects.length || cmd.assigns.length) {
    return err(
      "invalid_command_line",
      `\`${line}\` is not one program and its arguments: relay runs it without a shell, so ;, |, &&, redirections and VAR=value do not work (use env VAR=value ..., or sh -c '...')`,
    );
  }
  const expanded = cmd.words.find((w) => !w.fixed);
  if (expanded)
    return err(
      "invalid_command_line",
      `\`${line}\`: ${expanded.raw} would need a shell to expand, and relay runs the command line without one (quote it, or use sh -c '...')`,
    );
  return ok(cmd.words.map((w) => w.value));
}

/** Quotes argv for display (and for `sh -c`). */
export function joinCommandLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
}
