/**
 * One doctor check and the report of them all (what `relay doctor --json` prints), and the
 * helpers every check is made with. A check is `required` when `relay run` with the current
 * config cannot work without it; the doctor passes when every required check is `ok`.
 */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { errorMessage } from "../util/result.ts";

export const DoctorStatusSchema = lazySchema(() => z.enum(["ok", "missing", "warn"]));
export type DoctorStatus = z.infer<typeof DoctorStatusSchema>;

export const DoctorCheckSchema = lazySchema(() =>
  z.object({
    name: z.string(),
    status: DoctorStatusSchema,
    /** What was found; never a secret's value. */
    detail: z.string(),
    /** What to do about a status other than ok. */
    fix: z.string().optional(),
    /** `relay run` with the current config cannot work unless this is ok. */
    required: z.boolean(),
  }),
);
export type DoctorCheck = z.infer<typeof DoctorCheckSchema>;

/** What `relay doctor --json` prints. */
export const DoctorReportSchema = lazySchema(() =>
  z.object({
    checks: z.array(DoctorCheckSchema),
    /** Every required check is ok. */
    ok: z.boolean(),
  }),
);
export type DoctorReport = z.infer<typeof DoctorReportSchema>;

export function doctorPassed(checks: readonly DoctorCheck[]): boolean {
  return checks.every((c) => !c.required || c.status === "ok");
}

export function doctorReport(checks: DoctorCheck[]): DoctorReport {
  return DoctorReportSchema.parse({ checks, ok: doctorPassed(checks) });
}

export const notLinux = () =>
  `not Linux (${process.platform})${process.platform === "darwin" ? ": the sandbox uses Seatbelt here" : ""}`;

export function check(
  name: string,
  status: DoctorStatus,
  detail: string,
  required: boolean,
  fix?: string,
): DoctorCheck {
  return fix !== undefined && status !== "ok"
    ? { name, status, detail, fix, required }
    : { name, status, detail, required };
}

/** Runs `fn`; an exception becomes a `missing` check instead of ending the doctor. */
export async function guarded(
  name: string,
  required: boolean,
  fn: () => DoctorCheck | Promise<DoctorCheck>,
): Promise<DoctorCheck> {
  try {
    return await fn();
  } catch (e) {
    return check(name, "missing", `the check itself failed: ${errorMessage(e)}`, required);
  }
}

export function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
