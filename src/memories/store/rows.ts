/** zod schemas for every DB row the memories code reads: a damaged row is a clear error value. */
import { z } from "zod";
import { lazySchema } from "../../util/lazy-schema.ts";
import { err, ok, type Result } from "../../util/result.ts";

const int = lazySchema(() => z.coerce.number().int());
const nint = lazySchema(() => z.union([z.null(), int]));
const ntext = lazySchema(() => z.string().nullable());

export const ThreadRowSchema = lazySchema(() =>
  z.object({
    id: z.string().min(1),
    origin: z.string(),
    rollout_path: z.string().min(1),
    source: z.string(),
    cwd: z.string(),
    git_branch: ntext,
    created_at_ms: int,
    updated_at_ms: int,
    memory_mode: z.string(),
    host: z.string(),
  }),
);
export type ThreadRow = z.infer<typeof ThreadRowSchema>;

export const Stage1RowSchema = lazySchema(() =>
  z.object({
    thread_id: z.string().min(1),
    source_updated_at: int,
    raw_memory: z.string(),
    rollout_summary: z.string(),
    rollout_slug: ntext,
    generated_at: int,
    usage_count: nint,
    last_usage: nint,
    selected_for_phase2: int,
    selected_for_phase2_source_updated_at: nint,
  }),
);
export type Stage1Row = z.infer<typeof Stage1RowSchema>;

export const JobStatusSchema = lazySchema(() => z.enum(["pending", "running", "done", "error"]));
export const JobRowSchema = lazySchema(() =>
  z.object({
    kind: z.string(),
    job_key: z.string(),
    status: JobStatusSchema,
    worker_id: ntext,
    ownership_token: ntext,
    started_at: nint,
    finished_at: nint,
    lease_until: nint,
    retry_at: nint,
    retry_remaining: int,
    last_error: ntext,
    input_watermark: nint,
    last_success_watermark: nint,
    heartbeat_at: nint,
  }),
);
export type JobRow = z.infer<typeof JobRowSchema>;

/** Parses one row; the error names the table, the key and the offending columns. */
export function parseRow<T>(schema: z.ZodType<T>, table: string, key: string, row: unknown): Result<T> {
  const r = schema.safeParse(row);
  if (r.success) return ok(r.data);
  const cols = r.error.issues
    .slice(0, 4)
    .map((i) => `${i.path.map(String).join(".") || "row"}: ${i.message}`)
    .join("; ");
  return err(
    "db_corrupt",
    `the state DB has a damaged ${table} row (${key}): ${cols}. Run \`relay memories forget ${key}\` or repair the DB.`,
    {
      table,
      key,
    },
  );
}

export function parseRows<T>(
  schema: z.ZodType<T>,
  table: string,
  keyOf: (r: Record<string, unknown>) => string,
  rows: unknown[],
): Result<T[]> {
  const out: T[] = [];
  for (const row of rows) {
    const p = parseRow(schema, table, keyOf((row ?? {}) as Record<string, unknown>), row);
    if ("error" in p) return p;
    out.push(p.ok);
  }
  return ok(out);
}

/** Thrown inside a transaction to roll it back, caught by the caller and turned back into a value. */
export class RowError extends Error {
  constructor(readonly value: { error: { code: string; message: string; data?: unknown } }) {
    super(value.error.message);
  }
}

export function must<T>(r: Result<T>): T {
  if ("error" in r) throw new RowError(r);
  return r.ok;
}
