/** `--capability-root <environment>:<path>`: where skills are discovered, on which executor. */
import { err, ok, type Result } from "../util/result.ts";

export interface CapabilityRoot {
  environment: string;
  path: string;
}

export function parseCapabilityRoot(spec: string): Result<CapabilityRoot> {
  const i = spec.indexOf(":");
  if (i <= 0 || i === spec.length - 1) return err("invalid_capability_root", `--capability-root takes <environment>:<absolute path> (got ${JSON.stringify(spec)}), e.g. local:/home/me/skills`);
  return ok({ environment: spec.slice(0, i), path: spec.slice(i + 1) });
}

export const formatCapabilityRoot = (r: CapabilityRoot): string => `${r.environment}:${r.path}`;
