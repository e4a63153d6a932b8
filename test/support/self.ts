/**
 * Inside a test runner, argv[1] is the test file, not relay's entry point, so tests say how
 * to start relay through RELAY_SELF_COMMAND (children inherit it).
 */
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { MAIN_TS, NODE_BUNDLE } from "./paths.ts";

export function relayArgv(): string[] {
  const deno = (globalThis as { Deno?: { execPath(): string } }).Deno;
  if (deno) return [deno.execPath(), "run", "-A", "--no-check", MAIN_TS];
  if (process.versions.bun) return [process.execPath, MAIN_TS];
  return [process.execPath, NODE_BUNDLE];
}

export function useSourceRelay(): void {
  process.env.RELAY_SELF_COMMAND = joinCommandLine(relayArgv());
}
