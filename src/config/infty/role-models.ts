/**
 * A model per infty role: which flags and recorded settings apply to which role. Verifier i gets
 * the i-th `--verifier-model`, the last repeats. Per setting, the first that has it wins: the
 * role's flag, the flags for every role (-m, --provider, --base-url), what the run recorded for
 * the role (resume), the run's recorded defaults (resume), [infty.roles.<role>], the top of
 * config.toml. The order itself is config/resolve.ts's; the spec syntax is config/role-spec.ts's.
 */

import { err, ok, type Result } from "../../util/result.ts";
import type { ConfigOverrides, RelayConfig } from "../config.ts";
import { resolveConfig } from "../resolve.ts";
import type { RoleOverrides } from "../role-spec.ts";
import { roleKind, verifierNumber } from "./roles.ts";
import { type RunSettings, recordedGlobalOverrides, recordedRoleOverrides } from "./run-settings.ts";

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
  return resolveConfig(l.base, { recorded: [recordedGlobalOverrides(l.recorded)], flags: [l.globalFlags] });
}

/** One role's configuration (see the file comment for the order); the message names the role. */
export function roleConfig(l: RoleModelLayers, role: string): Result<RelayConfig> {
  const c = resolveConfig(l.base, {
    role: roleKind(role),
    recorded: [recordedGlobalOverrides(l.recorded), recordedRoleOverrides(l.recorded?.roles?.[role])],
    flags: [l.globalFlags, flagsFor(l.roleFlags, role)],
  });
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
