/**
 * A model per infty role. `--solver-model`, `--director-model` and `--verifier-model`
 * (repeatable: verifier i gets the i-th, the last repeats) take `MODEL[,key=value...]` with the
 * keys provider, base-url, effort and key-env; `[infty.roles.<role>]` in config.toml holds the same.
 * Per setting, the first that has it wins: the role's flag, the flags for every role (-m,
 * --provider, --base-url), what the run recorded for the role (resume), the run's recorded
 * defaults (resume), [infty.roles.<role>], the top of config.toml.
 */
import {
  applyOverrides,
  type ConfigOverrides,
  type RelayConfig,
  type RoleModelConfig,
  RoleModelConfigSchema,
} from "../config/config.ts";
import { mergeOverrides } from "../config/resume-settings.ts";
import { err, ok, type Result } from "../util/result.ts";
import { describeIssues } from "../util/schema-issues.ts";
import { roleKind, verifierNumber } from "./roles.ts";
import { type RunSettings, recordedGlobalOverrides, recordedRoleOverrides } from "./run-settings.ts";

/** The model settings a role can have of its own. */
export type RoleOverrides = Pick<
  ConfigOverrides,
  "model" | "provider" | "base_url" | "api_key_env" | "reasoning_effort"
>;

/** Spec keys -> config.toml keys (the names [infty.roles.*] uses). */
const SPEC_KEYS: Record<string, keyof RoleModelConfig> = {
  provider: "model_provider",
  "base-url": "base_url",
  url: "base_url",
  effort: "model_reasoning_effort",
  "key-env": "api_key_env",
};

export const ROLE_SPEC_HELP = "MODEL[,provider=P][,base-url=URL][,effort=E][,key-env=VAR]";

/** Parses `MODEL[,key=value...]` (the model may be left out: `effort=high`); `flag` names it in messages. */
export function parseRoleModelSpec(spec: string, flag: string): Result<RoleOverrides> {
  const parts = spec.split(",").map((p) => p.trim());
  const raw: Record<string, string> = {};
  const first = parts[0] !== undefined && !parts[0].includes("=") ? parts.shift() : undefined;
  if (first) raw.model = first;
  for (const part of parts) {
    const eq = part.indexOf("=");
    const key = SPEC_KEYS[part.slice(0, eq).trim()];
    if (eq < 0 || !key)
      return err(
        "invalid_role_model",
        `${flag} ${JSON.stringify(spec)}: ${JSON.stringify(part)} is not one of ${Object.keys(SPEC_KEYS).join("=, ")}=; write ${ROLE_SPEC_HELP}, e.g. ${flag} qwen3:8b,provider=openai-chat,base-url=http://localhost:11434/v1`,
      );
    if (key in raw) return err("invalid_role_model", `${flag} ${JSON.stringify(spec)} sets ${part.slice(0, eq)} twice`);
    raw[key] = part.slice(eq + 1).trim();
  }
  const parsed = RoleModelConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error.issues, raw).map(
      (i) => `${specKeyOf(i.key)}${i.message.slice(i.key.length)}`,
    );
    return err("invalid_role_model", `${flag} ${JSON.stringify(spec)}: ${problems.join("; ")}`);
  }
  if (Object.keys(parsed.data).length === 0)
    return err("invalid_role_model", `${flag} needs a model or a setting: ${ROLE_SPEC_HELP}`);
  return ok(fromRoleConfig(parsed.data));
}

function specKeyOf(configKey: string): string {
  return Object.entries(SPEC_KEYS).find(([, v]) => v === configKey)?.[0] ?? configKey;
}

export function fromRoleConfig(c: RoleModelConfig | undefined): RoleOverrides {
  if (!c) return {};
  return {
    model: c.model,
    provider: c.model_provider,
    base_url: c.base_url,
    api_key_env: c.api_key_env,
    reasoning_effort: c.model_reasoning_effort,
  };
}

/** The per-role flags: verifier i gets verifiers[i-1], the last one repeats. */
export interface RoleModelFlags {
  solver?: RoleOverrides;
  director?: RoleOverrides;
  verifiers?: RoleOverrides[];
}

export function flagsFor(flags: RoleModelFlags, role: string): RoleOverrides {
  const kind = roleKind(role);
  if (kind !== "verifier") return flags[kind] ?? {};
  const list = flags.verifiers ?? [];
  return list[verifierNumber(role) - 1] ?? list.at(-1) ?? {};
}

export interface RoleModelLayers {
  /** config.toml as loaded. */
  base: RelayConfig;
  /** run.json's settings (resume). */
  recorded?: RunSettings;
  /** Flags for every role (-m, --provider, --base-url, sandbox, executor...). */
  globalFlags: ConfigOverrides;
  roleFlags: RoleModelFlags;
}

/** The run's defaults: config.toml, the recorded defaults, the flags for every role. */
export function globalConfig(l: RoleModelLayers): Result<RelayConfig> {
  return applyOverrides(l.base, mergeOverrides(recordedGlobalOverrides(l.recorded), l.globalFlags));
}

/** One role's configuration (see the file comment for the order); the message names the role. */
export function roleConfig(l: RoleModelLayers, role: string): Result<RelayConfig> {
  const layers: ConfigOverrides[] = [
    fromRoleConfig(l.base.infty?.roles?.[roleKind(role)]),
    recordedGlobalOverrides(l.recorded),
    recordedRoleOverrides(l.recorded?.roles?.[role]),
    l.globalFlags,
    flagsFor(l.roleFlags, role),
  ];
  const c = applyOverrides(l.base, layers.reduce(mergeOverrides, {}));
  return "error" in c ? err(c.error.code, `the ${role}'s model settings: ${c.error.message}`) : c;
}

/** Every role's configuration, or the first problem. */
export function roleConfigs(l: RoleModelLayers, roles: readonly string[]): Result<Record<string, RelayConfig>> {
  const out: Record<string, RelayConfig> = {};
  for (const role of roles) {
    const c = roleConfig(l, role);
    if ("error" in c) return c;
    out[role] = c.ok;
  }
  return ok(out);
}
