/**
 * `settings` in run.json: what the roles' sessions ran with, so `relay infty resume` continues
 * the same way. The top-level keys are the run's defaults (older run.json files have only
 * these); `roles` holds each role's own model as it was resolved (flags, [infty.roles.*],
 * defaults), and code_mode / capability_roots / environments / executor_name the roles' tools.
 */
import { z } from "zod";
import { ModelProviderSchema } from "../../model/factory.ts";
import { lazySchema } from "../../util/lazy-schema.ts";
import { type CapabilityRoot, CapabilityRootSchema, recordedRoot } from "../capability-root.ts";
import type { ConfigOverrides, RelayConfig } from "../config.ts";
import { EnvironmentSpecSchema } from "../environment-spec.ts";
import type { SessionChoices } from "../resume-settings.ts";
import { RoleNameSchema } from "./roles.ts";

const httpUrl = lazySchema(() => z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }));

/** The model one role's session uses. */
export const RoleModelRecordSchema = lazySchema(() =>
  z.object({
    model: z.string().min(1),
    model_provider: ModelProviderSchema,
    base_url: httpUrl.optional(),
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"),
    model_reasoning_effort: z.string().min(1).optional(),
  }),
);
export type RoleModelRecord = z.infer<typeof RoleModelRecordSchema>;

export const RunSettingsSchema = lazySchema(() =>
  z.object({
    model: z.string(),
    model_provider: z.string(),
    base_url: z.string().optional(),
    api_key_env: z.string(),
    sandbox_mode: z.string(),
    sandbox_mechanism: z.string().optional(),
    sandbox_best_effort: z.boolean().optional(),
    approval_policy: z.string().optional(),
    model_reasoning_effort: z.string().optional(),
    model_reasoning_summary: z.string().optional(),
    executor: z.string().optional(),
    executor_name: z.string().min(1).optional(),
    code_mode: z.boolean().optional(),
    /** Older runs recorded `<environment>:<path>` strings. */
    capability_roots: z
      .array(z.union([CapabilityRootSchema, z.string().regex(/^[^:]+:.+$/, "must be <environment>:<path>")]))
      .optional(),
    environments: z.array(EnvironmentSpecSchema).optional(),
    roles: z.record(RoleNameSchema, RoleModelRecordSchema).optional(),
  }),
);
export type RunSettings = z.infer<typeof RunSettingsSchema>;

export function roleModelRecord(c: RelayConfig): RoleModelRecord {
  return {
    model: c.model,
    model_provider: c.model_provider,
    api_key_env: c.api_key_env,
    ...(c.base_url ? { base_url: c.base_url } : {}),
    ...(c.model_reasoning_effort ? { model_reasoning_effort: c.model_reasoning_effort } : {}),
  };
}

/** `global`: the run's defaults; `roles`: each role's resolved configuration. */
export function runSettings(
  global: RelayConfig,
  roles: Record<string, RelayConfig> = {},
  tools: SessionChoices = {},
): RunSettings {
  const c = global;
  const roots = tools.capabilityRoots ?? [];
  return {
    model: c.model,
    model_provider: c.model_provider,
    api_key_env: c.api_key_env,
    sandbox_mode: c.sandbox_mode,
    sandbox_mechanism: c.sandbox.mechanism,
    sandbox_best_effort: c.sandbox.best_effort,
    approval_policy: c.approval_policy,
    ...(c.base_url ? { base_url: c.base_url } : {}),
    ...(c.model_reasoning_effort ? { model_reasoning_effort: c.model_reasoning_effort } : {}),
    ...(c.model_reasoning_summary ? { model_reasoning_summary: c.model_reasoning_summary } : {}),
    ...(c.executor ? { executor: c.executor } : {}),
    ...(tools.executorName ? { executor_name: tools.executorName } : {}),
    ...(tools.codeMode ? { code_mode: true } : {}),
    ...(roots.length ? { capability_roots: roots } : {}),
    ...(tools.environments?.length ? { environments: tools.environments } : {}),
    ...(Object.keys(roles).length
      ? { roles: Object.fromEntries(Object.entries(roles).map(([r, rc]) => [r, roleModelRecord(rc)])) }
      : {}),
  };
}

/** The run's recorded defaults as configuration overrides (what a resume starts from). */
export function recordedGlobalOverrides(s: RunSettings | undefined): ConfigOverrides {
  if (!s) return {};
  return {
    model: s.model,
    provider: s.model_provider,
    base_url: s.base_url,
    api_key_env: s.api_key_env,
    sandbox_mode: s.sandbox_mode,
    sandbox_mechanism: s.sandbox_mechanism,
    sandbox_best_effort: s.sandbox_best_effort,
    approval_policy: s.approval_policy,
    reasoning_effort: s.model_reasoning_effort,
    reasoning_summary: s.model_reasoning_summary,
    executor: s.executor,
  };
}

/** One role's recorded model as overrides; none for a run recorded before roles had their own. */
export function recordedRoleOverrides(r: RoleModelRecord | undefined): ConfigOverrides {
  if (!r) return {};
  return {
    model: r.model,
    provider: r.model_provider,
    base_url: r.base_url,
    api_key_env: r.api_key_env,
    reasoning_effort: r.model_reasoning_effort,
  };
}

/** The roles' recorded tools (code mode, capability roots, executor name). */
export function recordedTools(s: RunSettings | undefined): SessionChoices {
  if (!s) return {};
  const roots = (s.capability_roots ?? []).flatMap((r) => recordedRoot(r) ?? []);
  return {
    ...(s.code_mode !== undefined ? { codeMode: s.code_mode } : {}),
    ...(roots.length ? { capabilityRoots: roots satisfies CapabilityRoot[] } : {}),
    ...(s.executor_name ? { executorName: s.executor_name } : {}),
    ...(s.environments?.length ? { environments: s.environments } : {}),
  };
}
