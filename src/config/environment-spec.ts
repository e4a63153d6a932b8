/**
 * Extra environments of a session: each is a named executor peer started from a command line
 * (`--environment build="ssh build-host relay executor"`, or `[environments.build] command =
 * "..."` in config.toml), used for the capabilities (skills) its roots select. The session's own
 * executor keeps its name (`local`, or `--executor-name`) and is not one of these.
 */
import { z } from "zod";
import { splitCommandLine } from "../protocol/command-line.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { EnvironmentNameSchema } from "./capability-root.ts";

export const EnvironmentSpecSchema = lazySchema(() =>
  z.object({ name: EnvironmentNameSchema, command: z.string().min(1) }),
);
export type EnvironmentSpec = z.infer<typeof EnvironmentSpecSchema>;

/** `[environments.NAME]` in config.toml. */
export const EnvironmentConfigSchema = lazySchema(() => z.object({ command: z.string().min(1) }));
export const EnvironmentsConfigSchema = lazySchema(() => z.record(EnvironmentNameSchema, EnvironmentConfigSchema));

const USAGE = '--environment takes NAME=COMMAND-LINE, e.g. build="ssh build-host relay executor"';

/** `NAME=COMMAND-LINE`; the command line must split into one program and its arguments. */
export function parseEnvironmentSpec(spec: string): Result<EnvironmentSpec> {
  const i = spec.indexOf("=");
  if (i <= 0) return err("invalid_environment", `${USAGE} (got ${JSON.stringify(spec)})`);
  const parsed = EnvironmentSpecSchema.safeParse({ name: spec.slice(0, i), command: spec.slice(i + 1).trim() });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return err(
      "invalid_environment",
      `${USAGE}: ${issue.path[0] === "name" ? `the name ${JSON.stringify(spec.slice(0, i))} ${issue.message}` : "the command line is empty"}`,
    );
  }
  const argv = splitCommandLine(parsed.data.command);
  if ("error" in argv) return err("invalid_environment", `--environment ${parsed.data.name}: ${argv.error.message}`);
  return ok(parsed.data);
}

export const configEnvironments = (c: z.infer<typeof EnvironmentsConfigSchema> | undefined): EnvironmentSpec[] =>
  Object.entries(c ?? {}).map(([name, e]) => ({ name, command: e.command }));

/** Layers merged by name: a later layer's command for a name replaces an earlier one's. */
export function mergeEnvironments(...layers: Array<EnvironmentSpec[] | undefined>): EnvironmentSpec[] {
  const byName = new Map<string, EnvironmentSpec>();
  for (const layer of layers) for (const e of layer ?? []) byName.set(e.name, e);
  return [...byName.values()];
}

/** Recorded environments (rollout turn_context, run.json); a malformed entry is left out. */
export function recordedEnvironments(v: unknown): EnvironmentSpec[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v.flatMap((e) => {
    const parsed = EnvironmentSpecSchema.safeParse(e);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The environment name of a session's own executor when none is given: `remote` with a command line, else `local`. */
export const defaultExecutorName = (executorCommand: string | undefined): string =>
  executorCommand ? "remote" : "local";
