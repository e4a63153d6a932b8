/** One compiled relay per test process, built on first use (Bun only) and removed at exit. */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildBinary } from "../../scripts/build.ts";

let built: string | undefined;

export function compiledRelay(): string {
  if (built) return built;
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-compiled-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  built = buildBinary({ outfile: path.join(dir, "relay") }).outfile;
  return built;
}

/** The environment a freshly started relay binary should see: no override of how to re-exec. */
export function envWithoutSelfCommand(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.RELAY_SELF_COMMAND;
  return env;
}
