/**
 * What a session ran with, so `relay run --resume` continues it the same way. Each turn_context
 * records, beside Codex's own fields (model, approval, sandbox, reasoning `effort`/`summary`),
 * the provider, base URL, key variable and executor command line, and the session's choices:
 * code mode, capability roots, executor name, extra environments. They come back from the rollout unless a flag
 * overrides them; the next turn_context records what the resumed turn used, overrides included.
 */

import type { ReasoningOptions } from "../model/responses.ts";
import { findRollout } from "../rollout/find.ts";
import { readRollout } from "../rollout/reader.ts";
import type { TurnContext } from "../rollout/schema.ts";
import { type CapabilityRoot, recordedRoot } from "./capability-root.ts";
import type { ConfigOverrides, RelayConfig } from "./config.ts";
import { applyOverrides } from "./config.ts";
import { type EnvironmentSpec, recordedEnvironments } from "./environment-spec.ts";

/** The relay-specific settings a turn_context carries, beside Codex's own fields. */
export function modelSettings(config: RelayConfig, provider: string): Record<string, string> {
  return {
    model_provider: provider,
    api_key_env: config.api_key_env,
    ...(config.base_url ? { base_url: config.base_url } : {}),
    ...(config.model_reasoning_effort ? { effort: config.model_reasoning_effort } : {}),
    // Codex reads `summary` in every turn_context; "none" (no summary asked) is its word for unset.
    summary: config.model_reasoning_summary ?? "none",
    ...(config.executor ? { executor: config.executor } : {}),
  };
}

/** The reasoning options the configuration asks for, if any. */
export function reasoningOf(config: RelayConfig): ReasoningOptions | undefined {
  if (!config.model_reasoning_effort && !config.model_reasoning_summary) return undefined;
  return {
    ...(config.model_reasoning_effort ? { effort: config.model_reasoning_effort } : {}),
    ...(config.model_reasoning_summary ? { summary: config.model_reasoning_summary } : {}),
  };
}

/** A session's own choices, which are options of the run rather than configuration. */
export interface SessionChoices {
  codeMode?: boolean;
  capabilityRoots?: CapabilityRoot[];
  executorName?: string;
  /** Extra environments (name and command line) the roots may select. */
  environments?: EnvironmentSpec[];
}

export function sessionSettings(c: Required<SessionChoices>): Record<string, unknown> {
  return {
    code_mode: c.codeMode,
    executor_name: c.executorName,
    ...(c.capabilityRoots.length ? { capability_roots: c.capabilityRoots } : {}),
    ...(c.environments.length ? { environments: c.environments } : {}),
  };
}

/** The choices `ctx` recorded; a malformed one is left out (the flag default applies). */
export function recordedChoices(ctx: TurnContext | undefined): SessionChoices {
  if (!ctx) return {};
  const raw = ctx as Record<string, unknown>;
  const out: SessionChoices = {};
  if (typeof raw.code_mode === "boolean") out.codeMode = raw.code_mode;
  const name = text(raw.executor_name);
  if (name) out.executorName = name;
  // Roots are recorded as CapabilityRootSchema JSON; older rollouts have `env:path` strings.
  if (Array.isArray(raw.capability_roots)) {
    const roots = raw.capability_roots.map(recordedRoot);
    if (roots.every((r) => r !== undefined)) out.capabilityRoots = roots as CapabilityRoot[];
  }
  const environments = recordedEnvironments(raw.environments);
  if (environments) out.environments = environments;
  return out;
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function sandboxMode(policy: unknown): string | undefined {
  if (typeof policy === "string") return policy;
  if (policy && typeof policy === "object")
    return text((policy as { mode?: unknown }).mode) ?? text((policy as { type?: unknown }).type);
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
    reasoning_effort: text(raw.effort),
    reasoning_summary: text(raw.summary),
    executor: text(raw.executor),
  };
  const kept: ConfigOverrides = {};
  for (const [key, value] of Object.entries(candidates) as Array<[keyof ConfigOverrides, string | undefined]>) {
    if (value !== undefined && "ok" in applyOverrides(base, { [key]: value }))
      (kept as Record<string, string>)[key] = value;
  }
  return kept;
}

/** The recorded settings of the session `resumeId` names; none when it cannot be read (the resume itself then says why). */
export async function resumeSettings(
  home: string,
  resumeId: string,
  base: RelayConfig,
): Promise<{ overrides: ConfigOverrides; choices: SessionChoices }> {
  const found = await findRollout(home, resumeId);
  if ("error" in found) return { overrides: {}, choices: {} };
  const r = await readRollout(found.ok.path);
  if ("error" in r) return { overrides: {}, choices: {} };
  return { overrides: recordedOverrides(r.ok.lastTurnContext, base), choices: recordedChoices(r.ok.lastTurnContext) };
}
