/** The run's shared compiled relay (Bun only; shared-relay.ts), for tests that need the binary itself. */
import { sharedRelay } from "./shared-relay.ts";

export function compiledRelay(): string {
  return sharedRelay();
}

/** The environment a freshly started relay binary should see: no override of how to re-exec. */
export function envWithoutSelfCommand(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.RELAY_SELF_COMMAND;
  return env;
}
