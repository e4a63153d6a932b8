/**
 * What a session selects, from its flags, what it recorded (a resume) and config.toml: its
 * capability roots (where skills are found), the extra environments those may name, and its own
 * executor's name. Roots: the flags, else the recorded ones, else config.toml's. Environments:
 * config.toml's, then the recorded ones, then the flags, by name (a later command for a name
 * wins).
 */

import { err, ok, type Result } from "../util/result.ts";
import { type CapabilityRoot, configRoots, duplicateRootId, parseCapabilityRoot } from "./capability-root.ts";
import type { RelayConfig } from "./config.ts";
import {
  configEnvironments,
  defaultExecutorName,
  type EnvironmentSpec,
  mergeEnvironments,
  parseEnvironmentSpec,
} from "./environment-spec.ts";
import type { SessionChoices } from "./resume-settings.ts";

export interface SelectionFlags {
  capabilityRoot?: string[];
  environment?: string[];
  executor?: string;
  executorName?: string;
}

export interface Selection {
  capabilityRoots: CapabilityRoot[];
  environments: EnvironmentSpec[];
  executorName: string;
}

/** Each spec parsed, or the first that is malformed (`--capability-root`, `--environment`). */
function parseEach<T>(specs: string[] | undefined, parse: (spec: string) => Result<T>): Result<T[]> {
  const out: T[] = [];
  for (const spec of specs ?? []) {
    const r = parse(spec);
    if ("error" in r) return r;
    out.push(r.ok);
  }
  return ok(out);
}

/** The selection, or why it cannot be made: a malformed flag, two roots with one id, an extra environment named like the session's executor. */
export function resolveSelection(
  flags: SelectionFlags,
  recorded: SessionChoices,
  config: RelayConfig,
): Result<Selection> {
  const fromFlags = parseEach(flags.capabilityRoot, parseCapabilityRoot);
  if ("error" in fromFlags) return fromFlags;
  const capabilityRoots = fromFlags.ok.length
    ? fromFlags.ok
    : (recorded.capabilityRoots ?? configRoots(config.capability_roots));
  const dup = duplicateRootId(capabilityRoots);
  if (dup)
    return err(
      "invalid_capability_root",
      `two capability roots have the id ${JSON.stringify(dup)}: give each its own id (id=...,env=...,path=...)`,
    );
  const given = parseEach(flags.environment, parseEnvironmentSpec);
  if ("error" in given) return given;
  const environments = mergeEnvironments(configEnvironments(config.environments), recorded.environments, given.ok);
  const executorName =
    flags.executorName ?? recorded.executorName ?? defaultExecutorName(flags.executor ?? config.executor);
  const clash = environments.find((e) => e.name === executorName);
  if (clash)
    return err(
      "invalid_environment",
      `--environment ${clash.name}: "${clash.name}" is the name of the session's own executor; give the extra environment another name (or the executor another --executor-name)`,
    );
  return ok({ capabilityRoots, environments, executorName });
}
