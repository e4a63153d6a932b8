/**
 * The executor's `skills/list` and `skills/read` methods: the skills (a folder with a SKILL.md)
 * under given roots on the executor's host, and a SKILL.md body a slice at a time
 * (workspace/skills.ts reads them).
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { defineMethod, specSchemas } from "./method.ts";
import * as checks from "./skills-checks.generated.ts";

export const SkillSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    path: z.string(),
    root: z.string(),
    /** Front matter `hidden: true`: invocable by name, left out of the catalog. */
    hidden: z.boolean().optional(),
  }),
);
export type Skill = z.infer<typeof SkillSchema>;

/** Why a root or a SKILL.md gave nothing. */
export const SkillSkipReasonSchema = lazySchema(() =>
  z.enum(["unavailable_root", "bad_front_matter", "too_large", "unreadable"]),
);

export const SkillsListMethod = defineMethod(
  "skills/list",
  lazySchema(() => z.object({ roots: z.array(z.string()), max_depth: z.number().int().min(0).max(6).default(3) })),
  lazySchema(() =>
    z.object({
      skills: z.array(SkillSchema),
      /** `path`/`reason` are absent in answers of executors older than them. */
      warnings: z.array(
        z.object({
          root: z.string(),
          message: z.string(),
          path: z.string().optional(),
          reason: SkillSkipReasonSchema.optional(),
        }),
      ),
    }),
  ),
  [],
);
export type SkillsListResult = z.infer<typeof SkillsListMethod.result>;

/** Bytes of one body slice a `skills/read` returns, unless asked for fewer. */
export const SKILL_BODY_MAX_BYTES = 32 * 1024;

export const SkillsReadMethod = defineMethod(
  "skills/read",
  lazySchema(() =>
    z.object({
      path: z.string(),
      /** Byte offset into the body (the text after the front matter). */
      offset: z.number().int().min(0).default(0),
      max_bytes: z
        .number()
        .int()
        .min(1)
        .max(1024 * 1024)
        .default(SKILL_BODY_MAX_BYTES),
    }),
  ),
  lazySchema(() =>
    z.object({
      body: z.string(),
      /** The file's size. */
      bytes: z.number(),
      /** The whole body's size; absent from older executors. */
      body_bytes: z.number().int().optional(),
      /** Where the next slice starts, when the body goes on past this one. */
      next_offset: z.number().int().optional(),
    }),
  ),
  ["invalid_params", "not_found"],
);
export type SkillBody = z.infer<typeof SkillsReadMethod.result>;

/**
 * The schemas of the skills methods, by the names of their generated checks
 * (npm run build:validators writes them to skills-checks.generated.ts).
 */
export const CHECKED_SCHEMAS = withChecks(
  checks,
  specSchemas({ skillsList: SkillsListMethod, skillsRead: SkillsReadMethod }),
);
