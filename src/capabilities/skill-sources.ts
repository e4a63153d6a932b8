/**
 * Which skills a session has, and from where. Capability roots are listed by the executor of
 * their environment (never read here); local skills, `$RELAY_HOME/skills` and the repository's
 * `.relay/skills` (each directory from the git root down to cwd), are read in this process,
 * since they are local by definition. When two skills share a name the first wins: roots in the
 * order given, then the repository's (nearest to cwd first), then RELAY_HOME's; so a skill an
 * executor lists always wins over a local one of the same name, which is then neither listed
 * nor injected. Everything left out is reported with its reason.
 */
import path from "node:path";
import { z } from "zod";
import type { CapabilityRoot } from "../config/capability-root.ts";
import {
  SKILL_BODY_MAX_BYTES,
  type SkillBody,
  SkillsListMethod,
  type SkillsListResult,
  SkillsReadMethod,
} from "../contracts/skills.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, type Result } from "../util/result.ts";
import { wholeCharsEnd } from "../util/utf8.ts";
import { projectDirs } from "../workspace/project-dirs.ts";
import { discoverSkills, readSkill } from "../workspace/skills.ts";
import type { SessionEnvironments } from "./environments.ts";

export const SkillSourceSchema = lazySchema(() =>
  z.discriminatedUnion("kind", [
    /** `home`: $RELAY_HOME/skills; `repo`: a .relay/skills of the repository. */
    z.object({ kind: z.literal("local"), dir: z.enum(["home", "repo"]), root: z.string() }),
    z.object({ kind: z.literal("environment"), environmentId: z.string(), rootId: z.string() }),
  ]),
);
export type SkillSource = z.infer<typeof SkillSourceSchema>;

export const SelectedSkillSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    /** The SKILL.md, on the environment of `source` (this host for a local skill). */
    path: z.string(),
    hidden: z.boolean(),
    source: SkillSourceSchema,
  }),
);
export type SelectedSkill = z.infer<typeof SelectedSkillSchema>;

export const SkipReasonSchema = lazySchema(() =>
  z.enum(["collision", "bad_front_matter", "too_large", "unreadable", "unavailable_root", "unavailable_environment"]),
);

export const SkippedSkillSchema = lazySchema(() =>
  z.object({
    /** The skill's name, when it had one (a collision). */
    name: z.string().optional(),
    /** The SKILL.md or the root that gave nothing. */
    path: z.string(),
    source: SkillSourceSchema,
    reason: SkipReasonSchema,
    message: z.string(),
  }),
);
export type SkippedSkill = z.infer<typeof SkippedSkillSchema>;

export const SkillsReportSchema = lazySchema(() =>
  z.object({ skills: z.array(SelectedSkillSchema), skipped: z.array(SkippedSkillSchema) }),
);
export type SkillsReport = z.infer<typeof SkillsReportSchema>;

/** `relay skills list --json`: the report, and each environment that was asked. */
export const SkillsListOutputSchema = lazySchema(() =>
  SkillsReportSchema.extend({
    environments: z.array(z.object({ id: z.string(), available: z.boolean(), detail: z.string() })),
  }),
);
export type SkillsListOutput = z.infer<typeof SkillsListOutputSchema>;

export function describeSource(s: SkillSource): string {
  return s.kind === "local"
    ? `local ${s.dir === "home" ? "RELAY_HOME/skills" : "repository .relay/skills"}`
    : `environment ${s.environmentId}, root ${s.rootId}`;
}

export interface SkillSearch {
  roots: CapabilityRoot[];
  environments: SessionEnvironments;
  home: string;
  /** Read the local skills (default true). */
  local?: boolean;
  /** The workspace whose repository's .relay/skills are read here; unset: none (a remote workspace). */
  localCwd?: string;
}

/** Local skill directories, in precedence order: the repository's nearest to cwd first, then RELAY_HOME's. */
async function localDirs(
  home: string,
  cwd: string | undefined,
): Promise<Array<{ dir: "home" | "repo"; root: string }>> {
  const repo = cwd
    ? (await projectDirs(cwd)).dirs
        .reverse()
        .map((d) => ({ dir: "repo" as const, root: path.join(d, ".relay", "skills") }))
    : [];
  return [...repo, { dir: "home", root: path.join(home, "skills") }];
}

type Listed = { source: SkillSource; result: SkillsListResult };

async function listRoot(root: CapabilityRoot, envs: SessionEnvironments): Promise<Listed | SkippedSkill> {
  const { environmentId, path: p } = root.location;
  const source: SkillSource = { kind: "environment", environmentId, rootId: root.id };
  const env = envs.get(environmentId);
  if (!env)
    return {
      path: p,
      source,
      reason: "unavailable_environment",
      message: `capability root ${root.id} skipped: ${envs.whyUnavailable(environmentId)}; skills are never read from the local filesystem instead`,
    };
  const listed = await env.peer.call(SkillsListMethod, { roots: [p] });
  if ("error" in listed)
    return {
      path: p,
      source,
      reason: "unavailable_root",
      message: `capability root ${root.id} on environment ${environmentId} unavailable: ${listed.error.message}`,
    };
  return { source, result: listed.ok };
}

export async function findSkills(s: SkillSearch): Promise<SkillsReport> {
  const fromRoots = await Promise.all(s.roots.map((r) => listRoot(r, s.environments)));
  const locals = await Promise.all(
    (s.local === false ? [] : await localDirs(s.home, s.localCwd)).map(async ({ dir, root }): Promise<Listed> => {
      const result = await discoverSkills([root]);
      // A local directory that does not exist is the usual case, not a problem.
      return {
        source: { kind: "local", dir, root },
        result: { ...result, warnings: result.warnings.filter((w) => w.reason !== "unavailable_root") },
      };
    }),
  );
  const skills: SelectedSkill[] = [];
  const skipped: SkippedSkill[] = [];
  const byName = new Map<string, SelectedSkill>();
  for (const listed of [...fromRoots, ...locals]) {
    if (!("result" in listed)) {
      skipped.push(listed);
      continue;
    }
    const { source, result } = listed;
    for (const w of result.warnings)
      skipped.push({
        path: w.path ?? w.root,
        source,
        reason: w.reason ?? "unavailable_root",
        message:
          source.kind === "environment"
            ? `capability root ${source.rootId} on environment ${source.environmentId}: ${w.message}`
            : w.message,
      });
    for (const k of result.skills) {
      const winner = byName.get(k.name);
      if (winner) {
        skipped.push({
          name: k.name,
          path: k.path,
          source,
          reason: "collision",
          message: `skill ${k.name} at ${k.path} (${describeSource(source)}) is shadowed by the one at ${winner.path} (${describeSource(winner.source)})`,
        });
        continue;
      }
      const skill: SelectedSkill = {
        name: k.name,
        description: k.description,
        path: k.path,
        hidden: k.hidden === true,
        source,
      };
      byName.set(k.name, skill);
      skills.push(skill);
    }
  }
  return { skills, skipped };
}

/**
 * One slice of a skill's body, read where the skill was listed: by its environment's executor,
 * or here for a local one. Never more than `maxBytes`, even from an executor that ignores it.
 */
export async function readSkillBody(
  skill: SelectedSkill,
  envs: SessionEnvironments,
  offset = 0,
  maxBytes = SKILL_BODY_MAX_BYTES,
): Promise<Result<SkillBody>> {
  let r: Result<SkillBody>;
  if (skill.source.kind === "local") r = await readSkill(skill.path, offset, maxBytes);
  else {
    const env = envs.get(skill.source.environmentId);
    if (!env)
      return err(
        "environment_unavailable",
        `skill ${skill.name} lives on environment ${skill.source.environmentId}, which is gone`,
      );
    r = await env.peer.call(SkillsReadMethod, { path: skill.path, offset, max_bytes: maxBytes });
  }
  if ("error" in r || r.ok.body_bytes !== undefined) return r;
  // An executor older than slices sends the whole body, whatever the offset: cut the slice here.
  const buf = Buffer.from(r.ok.body);
  const start = Math.min(offset, buf.length);
  const slice = buf.subarray(start, start + maxBytes);
  const end = start + (start + slice.length < buf.length ? wholeCharsEnd(slice) : slice.length);
  const body = buf.subarray(start, end).toString("utf8");
  return { ok: { ...r.ok, body, body_bytes: buf.length, ...(end < buf.length ? { next_offset: end } : {}) } };
}
