/** Skill folders and extra environments for the skills tests. */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { joinCommandLine } from "../../src/protocol/command-line.ts";
import { relayArgv } from "./self.ts";

/** Writes `<root>/<name>/SKILL.md`; returns its path. */
export function writeSkill(
  root: string,
  name: string,
  o: { description?: string; body?: string; hidden?: boolean; frontMatter?: string } = {},
): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "SKILL.md");
  const fm =
    o.frontMatter ??
    `---\nname: ${name}\ndescription: ${o.description ?? `the ${name} skill`}\n${o.hidden ? "hidden: true\n" : ""}---\n`;
  writeFileSync(file, `${fm}${o.body ?? `${name} body\n`}`);
  return file;
}

/**
 * The command line of an environment whose executor runs in `cwd`, started over a pipe as
 * `ssh host relay executor` would be. A root at /proc/self/cwd/<dir> then exists for that
 * executor only: the orchestrator and the session's own executor have another cwd.
 */
export function executorIn(cwd: string, argv: string[] = relayArgv()): string {
  return joinCommandLine([
    "sh",
    "-c",
    `cd ${joinCommandLine([cwd])} && exec ${joinCommandLine([...argv, "executor"])}`,
  ]);
}

/** A directory (its own cwd for an environment) holding `env-skills/`. */
export function envDir(): { dir: string; skills: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-env-"));
  return { dir, skills: path.join(dir, "env-skills") };
}

/** What an environment in `envDir()` sees at its `env-skills/`. */
export const ENV_ROOT = "/proc/self/cwd/env-skills";
