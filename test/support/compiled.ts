/** The environment a freshly started relay binary should see: no override of how to re-exec. */
export function envWithoutSelfCommand(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.RELAY_SELF_COMMAND;
  return env;
}
