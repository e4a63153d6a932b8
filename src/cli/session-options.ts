/**
 * The flags that give a session its tools, shared by `relay run` and `relay infty run|resume`:
 * a remote executor and its name, extra environments, capability roots (skills) and code mode.
 * One definition, so both commands spell, document and parse them the same way.
 */
import type { Command, OptionValues } from "@commander-js/extra-typings";
import type { RelayConfig } from "../config/config.ts";
import type { SessionChoices } from "../config/resume-settings.ts";
import { resolveSelection, type Selection, type SelectionFlags } from "../config/selection.ts";
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

/**
 * What a session selects from its flags, what it recorded and config.toml (config/selection.ts);
 * a malformed flag or a clash exits 2 with the reason.
 */
export function selection(flags: SelectionFlags, recorded: SessionChoices, config: RelayConfig): Selection {
  const chosen = resolveSelection(flags, recorded, config);
  if ("error" in chosen) fail(chosen.error.message, ExitCode.Usage);
  return chosen.ok;
}
