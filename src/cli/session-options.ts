/**
 * The flags that give a session its tools, shared by `relay run` and `relay infty run|resume`:
 * a remote executor and its name, extra environments, capability roots (skills) and code mode.
 * One definition, so both commands spell, document and parse them the same way.
 */
import type { Command, OptionValues } from "@commander-js/extra-typings";
import { type CapabilityRoot, configRoots, duplicateRootId, parseCapabilityRoot } from "../config/capability-root.ts";
import type { RelayConfig } from "../config/config.ts";
import {
  configEnvironments,
  defaultExecutorName,
  type EnvironmentSpec,
  mergeEnvironments,
  parseEnvironmentSpec,
} from "../config/environment-spec.ts";
import type { SessionChoices } from "../config/resume-settings.ts";
import { ExitCode, fail } from "./usage.ts";

const collect = (v: string, prev: string[] = []) => [...prev, v];

const CAPABILITY_ROOT_HELP =
  "discover skills (SKILL.md) under a path on an environment: ENV:PATH, or id=ID,env=ENV,path=PATH; repeatable (config: [[capability_roots]])";
const ENVIRONMENT_HELP =
  'an extra environment for capabilities: NAME=COMMAND-LINE starting a relay executor on stdio, e.g. build="ssh build-host relay executor"; repeatable (config: [environments.NAME] command)';

/** The executor, extra environments and capability roots (`who`: whose tools, in the help text). */
export function withSelectionOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  who = "the session",
) {
  return cmd
    .option(
      "--executor <command-line>",
      `run ${who}'s tools on a remote executor, e.g. "ssh build-host relay executor" (config: executor)`,
    )
    .option(
      "--executor-name <name>",
      "environment name of that executor, for --capability-root (default: local, or remote with --executor)",
    )
    .option("--environment <name=command-line>", ENVIRONMENT_HELP, collect)
    .option("--capability-root <root>", `${CAPABILITY_ROOT_HELP}; for ${who}`, collect);
}

/** `who`: whose tools they are in the help text ("the session", "every infty role"). */
export function withToolOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  who = "the session",
) {
  return withSelectionOptions(cmd, who)
    .option(
      "--code-mode",
      `also offer ${who} the exec tool (JavaScript run in a QuickJS sandbox; its tools.* calls use the session's tools) and wait`,
    )
    .option("--no-code-mode", "on resume: turn code mode off where it was on");
}

/** --capability-root flags (exit 2 on a malformed one), else the recorded roots. */
export function capabilityRoots(specs: string[] | undefined, recorded: CapabilityRoot[] | undefined): CapabilityRoot[] {
  const roots: CapabilityRoot[] = [];
  for (const spec of specs ?? []) {
    const r = parseCapabilityRoot(spec);
    if ("error" in r) fail(r.error.message, ExitCode.Usage);
    roots.push(r.ok);
  }
  return roots.length > 0 ? roots : (recorded ?? []);
}

export interface SelectionFlags {
  capabilityRoot?: string[];
  environment?: string[];
  executor?: string;
  executorName?: string;
}

/** What a session selects: roots and extra environments, and its own executor's name. */
export interface Selection {
  capabilityRoots: CapabilityRoot[];
  environments: EnvironmentSpec[];
  executorName: string;
}

/**
 * Roots: the flags, else what was recorded, else config.toml's. Environments: config.toml's,
 * then the recorded ones, then the flags, by name (a later command for a name wins). Exit 2 on a
 * malformed flag, two roots with one id, or an extra environment named like the session's executor.
 */
export function selection(flags: SelectionFlags, recorded: SessionChoices, config: RelayConfig): Selection {
  const fromFlags = capabilityRoots(flags.capabilityRoot, undefined);
  const capabilityRoots_ = fromFlags.length
    ? fromFlags
    : (recorded.capabilityRoots ?? configRoots(config.capability_roots));
  const dup = duplicateRootId(capabilityRoots_);
  if (dup)
    fail(
      `two capability roots have the id ${JSON.stringify(dup)}: give each its own id (id=...,env=...,path=...)`,
      ExitCode.Usage,
    );
  const given = (flags.environment ?? []).map((spec) => {
    const r = parseEnvironmentSpec(spec);
    if ("error" in r) fail(r.error.message, ExitCode.Usage);
    return r.ok;
  });
  const environments = mergeEnvironments(configEnvironments(config.environments), recorded.environments, given);
  const executorName =
    flags.executorName ?? recorded.executorName ?? defaultExecutorName(flags.executor ?? config.executor);
  const clash = environments.find((e) => e.name === executorName);
  if (clash)
    fail(
      `--environment ${clash.name}: "${clash.name}" is the name of the session's own executor; give the extra environment another name (or the executor another --executor-name)`,
      ExitCode.Usage,
    );
  return { capabilityRoots: capabilityRoots_, environments, executorName };
}
