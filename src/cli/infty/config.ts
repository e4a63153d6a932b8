/**
 * What an infty run's roles run with: config.toml, then what a resumed run recorded, then the
 * flags (see src/config/infty/role-models.ts for the order per role). Everything is checked here,
 * before the run directory exists: a run that cannot start leaves nothing behind (exit 2).
 */
import { existsSync, readFileSync } from "node:fs";
import { type ConfigOverrides, loadConfig, type RelayConfig } from "../../config/config.ts";
import {
  globalConfig,
  type RoleModelFlags,
  type RoleModelLayers,
  type RunSettings,
  recordedTools,
  roleConfigs,
  roleNames,
} from "../../config/infty/index.ts";
import type { SessionChoices } from "../../config/resume-settings.ts";
import type { RoleOverrides } from "../../config/role-spec.ts";
import { relayHome } from "../../home/home.ts";
import { type InftyOptions, scriptedModels } from "../../infty/orchestrator.ts";
import { checkCredentials } from "../../policy/preflight.ts";
import { selection } from "../session-options.ts";
import { ExitCode, fail, warn } from "../usage.ts";

/** The flags `relay infty run` and `resume` share (models, sandbox, tools). */
export interface InftyFlags {
  model?: string;
  provider?: string;
  baseUrl?: string;
  apiKeyEnv?: string;
  script?: string;
  sandbox?: string;
  sandboxMechanism?: string;
  sandboxBestEffort?: boolean;
  solverModel?: RoleOverrides;
  directorModel?: RoleOverrides;
  verifierModel?: RoleOverrides[];
  executor?: string;
  executorName?: string;
  capabilityRoot?: string[];
  environment?: string[];
  codeMode?: boolean;
}

export interface InftyRunConfig {
  config: RelayConfig;
  roleConfig: (role: string) => RelayConfig;
  tools: SessionChoices;
  modelFor?: InftyOptions["modelFor"];
}

function globalFlags(f: InftyFlags): ConfigOverrides {
  return {
    model: f.model ?? (f.script ? "scripted" : undefined),
    provider: f.provider,
    base_url: f.baseUrl,
    api_key_env: f.apiKeyEnv,
    sandbox_mode: f.sandbox,
    sandbox_mechanism: f.sandboxMechanism,
    sandbox_best_effort: f.sandboxBestEffort,
    executor: f.executor,
  };
}

function roleFlags(f: InftyFlags, verifiers: number): RoleModelFlags {
  const given = f.verifierModel?.length ?? 0;
  if (given > Math.max(verifiers, 1))
    fail(
      `${given} --verifier-model flags for ${verifiers} Verifier(s): give one per Verifier at most (the last repeats), or more Verifiers with --verifiers ${given}`,
      ExitCode.Usage,
    );
  return { solver: f.solverModel, director: f.directorModel, verifiers: f.verifierModel };
}

/** `recorded`: the settings of the run being resumed; `verifiers`: how many the run has. */
export async function inftyRunConfig(
  flags: InftyFlags,
  recorded: RunSettings | undefined,
  verifiers: number,
): Promise<InftyRunConfig> {
  const loaded = await loadConfig(relayHome());
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  warn(loaded.ok.warnings);
  const layers: RoleModelLayers = {
    base: loaded.ok.config,
    recorded,
    globalFlags: globalFlags(flags),
    roleFlags: roleFlags(flags, verifiers),
  };
  const config = globalConfig(layers);
  if ("error" in config) fail(config.error.message, ExitCode.Usage);
  const roles = roleConfigs(layers, roleNames(verifiers));
  if ("error" in roles) fail(roles.error.message, ExitCode.Usage);
  const roleConfig = (role: string) => roles.ok[role] ?? config.ok;
  const tools = toolsOf(flags, recorded, config.ok);
  if (!flags.script) {
    checkRoleCredentials(roles.ok);
    return { config: config.ok, roleConfig, tools };
  }
  if (!existsSync(flags.script)) fail(`script file not found: ${flags.script}`, ExitCode.Usage);
  const models = scriptedModels(readFileSync(flags.script, "utf8"), flags.script);
  if ("error" in models) fail(models.error.message, ExitCode.Usage);
  return { config: config.ok, roleConfig, tools, modelFor: models.ok };
}

/** The flags, else what the run recorded (else config.toml, for roots and environments). */
function toolsOf(flags: InftyFlags, recorded: RunSettings | undefined, config: RelayConfig): SessionChoices {
  const before = recordedTools(recorded);
  const codeMode = flags.codeMode ?? before.codeMode;
  const chosen = selection(flags, before, config);
  const executorName = flags.executorName ?? before.executorName;
  return {
    ...(codeMode !== undefined ? { codeMode } : {}),
    capabilityRoots: chosen.capabilityRoots,
    environments: chosen.environments,
    ...(executorName ? { executorName } : {}),
  };
}

/** Every role's provider has its key; the message names the role when the roles differ. */
function checkRoleCredentials(roles: Record<string, RelayConfig>): void {
  const byEndpoint = new Map<string, [string, RelayConfig]>();
  for (const [role, c] of Object.entries(roles)) {
    const key = `${c.model_provider} ${c.base_url ?? ""} ${c.api_key_env}`;
    if (!byEndpoint.has(key)) byEndpoint.set(key, [role, c]);
  }
  for (const [role, c] of byEndpoint.values()) {
    const creds = checkCredentials(c, process.env);
    if ("error" in creds)
      fail(
        byEndpoint.size > 1 ? `the ${role}'s model (${c.model}): ${creds.error.message}` : creds.error.message,
        ExitCode.Usage,
      );
  }
}
