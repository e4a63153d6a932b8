/**
 * The values Codex reads in the lines Relay writes, so that `codex resume` takes a Relay
 * session (facts from running Codex 0.171 against a fake server; see docs/codex.md):
 * `session_meta.model_provider` is a provider id Codex has configured (a client type such as
 * "openai-responses" makes it refuse the thread), a turn_context's `sandbox_policy` is tagged by
 * `type`, and each turn has a `turn_id`. Relay's own fields ride along; Codex ignores them.
 */

/** Codex's built-in provider ids. */
export const CODEX_PROVIDER_IDS = ["openai", "ollama", "lmstudio", "amazon-bedrock"] as const;

/**
 * The Codex provider id for a base URL: Ollama's and LM Studio's default local ports, else
 * "openai" (what a Codex install is configured with unless told otherwise).
 */
export function codexProviderId(baseUrl: string | undefined): (typeof CODEX_PROVIDER_IDS)[number] {
  if (!baseUrl) return "openai";
  let port = "";
  try {
    port = new URL(baseUrl).port;
  } catch {
    return "openai";
  }
  if (port === "11434") return "ollama";
  if (port === "1234") return "lmstudio";
  return "openai";
}

/** The API a Relay client speaks, recorded beside the provider id (`wire_api`, as Codex's provider config calls it). */
export function wireApiOf(clientType: string): string {
  if (clientType === "openai-chat") return "chat";
  if (clientType === "openai-responses") return "responses";
  return clientType;
}

/** A sandbox policy in Codex's tagged shape; `extra` (Relay's mechanism, gaps) is kept beside it. */
export function codexSandboxPolicy(mode: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const workspace = mode === "workspace-write" ? { network_access: false } : {};
  return { type: mode, ...workspace, ...extra };
}
