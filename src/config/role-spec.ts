/**
 * A model per infty role as the command line and config.toml give it: `--solver-model`,
 * `--director-model` and `--verifier-model` take `MODEL[,key=value...]` with the keys provider,
 * base-url, effort and key-env; `[infty.roles.<role>]` holds the same settings under their
 * config.toml names. Both become the same overrides, which config/resolve.ts layers.
 */
import { err, ok, type Result } from "../util/result.ts";
import { describeIssues } from "../util/schema-issues.ts";
import { type ConfigOverrides, type RoleModelConfig, RoleModelConfigSchema } from "./config.ts";

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
