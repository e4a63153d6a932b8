/**
 * Splits a user command line such as `ssh host 'relay executor'` into argv with POSIX shell
 * word rules (quotes, backslashes), without running a shell.
 */
import { err, ok, type Result } from "../util/result.ts";

export function splitCommandLine(line: string): Result<string[]> {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else cur += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = undefined;
      else if (c === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) cur += line[++i];
      else cur += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\") {
      if (i + 1 < line.length) cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote) return err("invalid_command_line", `unterminated ${quote} quote in command line: ${line}`);
  if (inWord) words.push(cur);
  if (words.length === 0) return err("invalid_command_line", "the command line is empty");
  return ok(words);
}

/** Quotes argv for display (and for `sh -c`). */
export function joinCommandLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(" ");
}
