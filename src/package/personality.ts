/**
 * A package ships the one relay binary under several names (bin/relay-code-mode-host is a hard
 * link to bin/relay or bin/relay-executor). Started under such a name, the binary acts as that
 * subcommand: the code-mode client runs `relay-code-mode-host` with no arguments.
 */
import path from "node:path";

/** Executable base name (without .exe) -> the subcommand it stands for. */
export const PERSONALITIES: Readonly<Record<string, string>> = {
  "relay-code-mode-host": "code-mode-host",
  // The relay-executor package variant: `ssh host relay-executor` serves the executor.
  "relay-executor": "executor",
};

/**
 * `argv` (node-style: runtime, script, ...args) with the personality's subcommand inserted when
 * `execPath` is named after one and the arguments name no subcommand (none, or only options other
 * than --version/--help). `relay-code-mode-host rpc-echo` stays `rpc-echo`, so the binary can still
 * re-exec itself for any subcommand. Only for compiled binaries: from source the executable is bun.
 */
export function applyPersonality(argv: readonly string[], execPath: string, compiled: boolean): string[] {
  const out = [...argv];
  if (!compiled) return out;
  const sub = PERSONALITIES[path.basename(execPath).replace(/\.exe$/i, "")];
  if (!sub) return out;
  const rest = out.slice(2);
  const first = rest[0];
  if (first !== undefined && (!first.startsWith("-") || ["-V", "--version", "-h", "--help"].includes(first)))
    return out;
  return [...out.slice(0, 2), sub, ...rest];
}
