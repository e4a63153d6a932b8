/**
 * `relay skills list`: every skill a session would have with the same flags (local ones and
 * those of capability roots on environments), where each comes from, and why any was left out.
 */

import path from "node:path";
import { Command } from "@commander-js/extra-typings";
import { startEnvironment, startEnvironments } from "../capabilities/environments.ts";
import { describeSource, findSkills, type SkillsListOutput } from "../capabilities/skill-sources.ts";
import { loadConfig } from "../config/config.ts";
import { relayHome } from "../home/home.ts";
import { checkWorkingDir } from "../policy/preflight.ts";
import { selection, withSelectionOptions } from "./session-options.ts";
import { ExitCode, fail, warn } from "./usage.ts";

function listOptions() {
  const list = new Command("list")
    .description(
      "list the skills a session would have: local ones ($RELAY_HOME/skills, the repository's .relay/skills) and those under --capability-root on its environments",
    )
    .option(
      "--json",
      "print {skills, skipped, environments} as JSON (SkillsListOutputSchema in src/capabilities/skill-sources.ts)",
    )
    .option("-C, --cd <dir>", "the workspace whose repository's .relay/skills count (default: the current directory)");
  return withSelectionOptions(list);
}

const SKILLS_HELP = `
A skill is a folder with a SKILL.md that starts with front matter:
  ---
  name: deploy
  description: How to deploy this service
  hidden: true            # optional: invocable by name ($deploy, the skill tool), not listed
  ---
When two skills have one name, the first wins: capability roots in the order given, then the
repository's .relay/skills (nearest to the workspace first), then $RELAY_HOME/skills.
Exit codes: 0 listed (unavailable environments and skipped skills are reported), 2 bad usage.

Examples:
  relay skills list
  relay skills list --json --environment build="ssh build-host relay executor" --capability-root id=deploy@1,env=build,path=/opt/plugins/deploy`;

export function skillsCommand() {
  return new Command("skills")
    .description("skills: instructions for particular tasks, listed in a session's instructions and read on demand")
    .addCommand(listOptions().addHelpText("after", SKILLS_HELP).action(listAction));
}

type ListOpts = ReturnType<ReturnType<typeof listOptions>["opts"]>;

async function listAction(opts: ListOpts): Promise<void> {
  const home = relayHome();
  const loaded = await loadConfig(home);
  if ("error" in loaded) fail(loaded.error.message, ExitCode.Usage);
  const config = loaded.ok.config;
  const dir = checkWorkingDir(opts.cd);
  if ("error" in dir) fail(dir.error.message, ExitCode.Usage);
  const cwd = path.resolve(opts.cd ?? process.cwd());
  const chosen = selection(opts, {}, config);
  const executorCommand = opts.executor ?? config.executor;
  const warnings: string[] = [];
  const envs = await startEnvironments(chosen.environments, chosen.executorName, (m) => warnings.push(m));
  // The session's own executor starts only when a root is on it.
  const main = chosen.capabilityRoots.some((r) => r.location.environmentId === chosen.executorName)
    ? await startEnvironment({ name: chosen.executorName, command: executorCommand })
    : undefined;
  if (main && "ok" in main) envs.addMain(main.ok.env);
  if (main && "error" in main) warnings.push(main.error.message);
  try {
    const report = await findSkills({
      roots: chosen.capabilityRoots,
      environments: envs,
      home,
      ...(executorCommand ? {} : { localCwd: cwd }),
    });
    const asked = [
      ...(main ? [chosen.executorName] : []),
      ...chosen.environments.map((e) => e.name).filter((n) => n !== chosen.executorName),
    ];
    const out: SkillsListOutput = {
      ...report,
      environments: asked.map((id) => {
        const e = envs.get(id);
        return e
          ? {
              id,
              available: true,
              detail: `${e.info.hostname} (${e.info.platform})${e.command ? `: ${e.command}` : ""}`,
            }
          : { id, available: false, detail: envs.unavailable.get(id) ?? envs.whyUnavailable(id) };
      }),
    };
    if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else {
      warn(warnings);
      process.stdout.write(render(out));
    }
  } finally {
    await envs.close();
    if (main && "ok" in main) await main.ok.child.shutdown();
  }
}

function render(out: SkillsListOutput): string {
  const lines: string[] = [];
  const width = Math.min(32, Math.max(4, ...out.skills.map((s) => s.name.length)));
  for (const s of out.skills)
    lines.push(
      `${s.name.padEnd(width)}  ${describeSource(s.source).padEnd(40)}  ${s.path}${s.hidden ? "  (hidden)" : ""}`,
    );
  const hidden = out.skills.filter((s) => s.hidden).length;
  const skipped = out.skipped.length ? `; ${out.skipped.length} skipped:` : "";
  if (out.skills.length === 0)
    lines.push(
      `no skills${skipped} (add one as $RELAY_HOME/skills/<name>/SKILL.md or .relay/skills/<name>/SKILL.md in the repository, or select a root with --capability-root ENV:PATH)`,
    );
  else
    lines.push(
      `${out.skills.length} skill${out.skills.length === 1 ? "" : "s"}${hidden ? ` (${hidden} hidden: invocable, not listed to the model)` : ""}${skipped}`,
    );
  for (const k of out.skipped) lines.push(`  ${k.reason}: ${k.message}`);
  for (const e of out.environments)
    lines.push(`environment ${e.id}: ${e.available ? e.detail : `unavailable: ${e.detail}`}`);
  return `${lines.join("\n")}\n`;
}
