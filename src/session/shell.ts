/** Shell selection and the final argv for a model's command (the orchestrator decides these). */
import { existsSync } from "node:fs";

export interface ShellChoice {
  /** Explicit shell from the tool call. */
  requested?: string;
  /** From config `[shell] path`. */
  configured?: string;
  login: boolean;
}

export function pickShell(choice: ShellChoice, env: NodeJS.ProcessEnv = process.env): string {
  if (choice.requested) return choice.requested;
  if (choice.configured) return choice.configured;
  const user = env.SHELL;
  // Shells that do not take `-c` the POSIX way would break every command; fall back to bash/sh.
  if (user && /\/(bash|zsh|sh|dash|ksh)$/.test(user) && existsSync(user)) return user;
  return existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
}

export function commandArgv(shell: string, cmd: string, login: boolean): string[] {
  const base = shell.split(/[\\/]/).pop()!.toLowerCase();
  if (base === "pwsh" || base === "powershell" || base === "pwsh.exe" || base === "powershell.exe")
    return [shell, "-NoProfile", "-Command", cmd];
  if (base === "cmd" || base === "cmd.exe") return [shell, "/c", cmd];
  return [shell, login ? "-lc" : "-c", cmd];
}
