/**
 * How every setting is decided, for `relay run`, `relay infty` and each infty role alike: the
 * top of config.toml, then (for a role) its `[infty.roles.<role>]`, then what the session or run
 * recorded (a resume continues as it ran), then the flags; within each, later layers win, and a
 * layer's unset values leave the one below. The result is checked once, against the schema
 * config.toml is checked with, so a bad flag fails with the same message a bad file would.
 */
import type { Result } from "../util/result.ts";
import { applyOverrides, type ConfigOverrides, type RelayConfig } from "./config.ts";
import { fromRoleConfig } from "./role-spec.ts";

/** The infty roles config.toml can set a model for (`[infty.roles.<kind>]`). */
export type RoleKind = "solver" | "director" | "verifier";

export interface SettingLayers {
  /** A role whose `[infty.roles.<role>]` applies over the top of the file. */
  role?: RoleKind;
  /** What a resumed session or run recorded, lowest first. */
  recorded?: ConfigOverrides[];
  /** The command line, lowest first (the flags for every role, then the role's own). */
  flags?: ConfigOverrides[];
}

/** The configuration `layers` make of `file` (config.toml as loaded). */
export function resolveConfig(file: RelayConfig, layers: SettingLayers = {}): Result<RelayConfig> {
  const stack = [
    layers.role ? fromRoleConfig(file.infty?.roles?.[layers.role]) : {},
    ...(layers.recorded ?? []),
    ...(layers.flags ?? []),
  ];
  return applyOverrides(file, stack.reduce(mergeOverrides, {}));
}

/** `over` wins over `under`: its `undefined` values leave `under`'s. */
export function mergeOverrides(under: ConfigOverrides, over: ConfigOverrides): ConfigOverrides {
  const out: Record<string, unknown> = { ...under };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) out[k] = v;
  return out as ConfigOverrides;
}
