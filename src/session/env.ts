/**
 * The environment a model's command gets. Inherited from relay's own environment, minus
 * anything that looks like a credential: the agent's commands never see the API key.
 */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|PRIVATE)/i;
/** Names that match the pattern above but are safe and useful. */
const ALLOWED = new Set(["SSH_AUTH_SOCK", "GPG_AGENT_INFO"]);

export function commandEnv(
  sessionId: string,
  base: NodeJS.ProcessEnv = process.env,
  extra: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (SECRET_NAME.test(k) && !ALLOWED.has(k)) continue;
    if (k.startsWith("RELAY_") && k !== "RELAY_HOME") continue;
    env[k] = v;
  }
  env.RELAY_SESSION_ID = sessionId;
  return { ...env, ...extra };
}
