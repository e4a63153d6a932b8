/**
 * The flags that give a session its tools, shared by `relay run` and `relay infty run|resume`:
 * a remote executor and its name, capability roots (skills) and code mode. One definition, so
 * both commands spell, document and parse them the same way.
 */
import type { Command, OptionValues } from "@commander-js/extra-typings";
import { parseCapabilityRoot, type CapabilityRoot } from "../session/capability-root.ts";
import { ExitCode, fail } from "./usage.ts";

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** `who`: whose tools they are in the help text ("the session", "every infty role"). */
export function withToolOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>, who = "the session") {
  return cmd
    .option("--executor <command-line>", `run ${who}'s tools on a remote executor, e.g. "ssh build-host relay executor" (config: executor)`)
    .option("--executor-name <name>", "environment name of the executor for --capability-root (default: local, or remote with --executor)")
    .option("--capability-root <env:path>", `discover skills (SKILL.md) under this path on the named executor, for ${who}; repeatable`, collect)
    .option("--code-mode", `also offer ${who} the exec tool (JavaScript run in a QuickJS sandbox; its tools.* calls use the session's tools) and wait`)
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
