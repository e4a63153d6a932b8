/**
 * What `relay infty` decides from configuration: its role names, the settings a run records in
 * run.json (so a resume keeps them), and each role's configuration from config.toml,
 * `[infty.roles.<role>]`, what the run recorded and the flags (config/resolve.ts's order).
 */
export {
  flagsFor,
  globalConfig,
  type RoleModelFlags,
  type RoleModelLayers,
  roleConfig,
  roleConfigs,
} from "./role-models.ts";
export { type RoleKind, RoleNameSchema, roleKind, roleNames, verifierNumber } from "./roles.ts";
export * from "./run-settings.ts";
