/**
 * The executor's `project_docs/read` method: the AGENTS.md files of a workspace, read on the
 * executor's host (workspace/project-docs.ts) within a byte budget.
 */
import { z } from "zod";
import { withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { defineMethod, specSchemas } from "./method.ts";
import * as checks from "./project-docs-checks.generated.ts";

export const DEFAULT_PROJECT_DOC_NAMES = ["AGENTS.override.md", "AGENTS.md"];

export const ProjectDocSchema = lazySchema(() =>
  z.object({
    path: z.string(),
    /** The file's size on disk. */
    bytes: z.number().int(),
    text: z.string(),
    /** The budget ran out inside this file: `text` holds its first part. */
    truncated: z.boolean(),
  }),
);
export type ProjectDoc = z.infer<typeof ProjectDocSchema>;

export const ProjectDocsMethod = defineMethod(
  "project_docs/read",
  lazySchema(() =>
    z.object({
      cwd: z.string(),
      /** Names tried in each directory, first match wins. */
      names: z.array(z.string().min(1)).min(1).default(DEFAULT_PROJECT_DOC_NAMES),
      max_bytes: z.number().int().min(0),
    }),
  ),
  lazySchema(() =>
    z.object({ docs: z.array(ProjectDocSchema), root: z.string().nullable(), warnings: z.array(z.string()) }),
  ),
  [],
);

/**
 * The schemas of the project-docs method, by the names of their generated checks
 * (npm run build:validators writes them to project-docs-checks.generated.ts).
 */
export type ProjectDocsResult = z.infer<typeof ProjectDocsMethod.result>;

export const CHECKED_SCHEMAS = withChecks(checks, specSchemas({ projectDocs: ProjectDocsMethod }));
