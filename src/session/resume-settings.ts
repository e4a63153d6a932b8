/**
 * What a session ran with, so `relay run --resume` continues it the same way: the provider,
 * base URL and key variable (recorded in each turn_context next to the model, approval and
 * sandbox mode) come back from the rollout unless a flag overrides them. The next turn_context
 * records what the resumed turn used, overrides included.
 */
import type { RelayConfig, ConfigOverrides } from "./config.ts";
import { applyOverrides } from "./config.ts";
import { findRollout } from "./rollout/find.ts";
import { readRollout } from "./rollout/reader.ts";
import type { TurnContext } from "./rollout/schema.ts";

/** The relay-specific settings a turn_context carries, beside Codex's own fields. */
export function modelSettings(config: RelayConfig, provider: string): Record<string, string> {
  return {
    model_provider: provider,
    api_key_env: config.api_key_env,
    ...(config.base_url ? { base_url: config.base_url } : {}),
  };
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function sandboxMode(policy: unknown): string | undefined {
  if (typeof policy === "string") return policy;
  if (policy && typeof policy === "object") return text((policy as { mode?: unknown }).mode) ?? text((policy as { type?: unknown }).type);
  return undefined;
}

/**
 * Overrides that restore `ctx`; a value relay cannot use (a Codex provider name, say) is left
 * out, so that setting falls back to the configuration instead of failing the resume.
 */
export function recordedOverrides(ctx: TurnContext | undefined, base: RelayConfig): ConfigOverrides {
  if (!ctx) return {};
  const raw = ctx as Record<string, unknown>;
  const candidates: ConfigOverrides = {
    model: text(raw.model),
    provider: text(raw.model_provider),
    base_url: text(raw.base_url),
    api_key_env: text(raw.api_key_env),
    approval_policy: text(raw.approval_policy),
    sandbox_mode: sandboxMode(raw.sandbox_policy),
  };
  const kept: ConfigOverrides = {};
  for (const [key, value] of Object.entries(candidates) as Array<[keyof ConfigOverrides, string | undefined]>) {
    if (value !== undefined && "ok" in applyOverrides(base, { [key]: value })) (kept as Record<string, string>)[key] = value;
  }
  return kept;
}

/** Flags win over what was recorded: `undefined` flags leave the recorded value. */
export function mergeOverrides(recorded: ConfigOverrides, flags: ConfigOverrides): ConfigOverrides {
  const out: Record<string, unknown> = { ...recorded };
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) out[k] = v;
  return out as ConfigOverrides;
}

/** The recorded settings of the session `resumeId` names; none when it cannot be read (the resume itself then says why). */
export async function resumeOverrides(home: string, resumeId: string, base: RelayConfig): Promise<ConfigOverrides> {
  const found = await findRollout(home, resumeId);
  if ("error" in found) return {};
  const r = await readRollout(found.ok.path);
  return "error" in r ? {} : recordedOverrides(r.ok.lastTurnContext, base);
}
