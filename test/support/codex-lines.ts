/**
 * What `codex resume` (0.171) requires of a rollout's lines, as zod schemas written from what
 * that version writes and refuses (docs/codex.md): the first line a session_meta with id,
 * timestamp, cwd, originator and cli_version, and a provider id Codex has configured; turn
 * contexts with a turn id, Codex's approval words and a sandbox policy tagged by `type`; in a
 * paginated file an ordinal on every line, counting from 0. Extra fields are allowed (Codex
 * ignores them). A validator for tests, checked against lines real Codex versions write.
 */
import { z } from "zod";
import { CODEX_PROVIDER_IDS } from "../../src/rollout/codex-compat.ts";

const Uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

export const CodexEnvelopeSchema = z.looseObject({
  timestamp: z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
  ordinal: z.number().int().min(0).optional(),
  type: z.string().min(1),
  payload: z.looseObject({}),
});

export const CodexSessionMetaSchema = z.looseObject({
  id: Uuid,
  timestamp: z.string(),
  cwd: z.string(),
  originator: z.string(),
  cli_version: z.string(),
  model_provider: z.string().min(1).optional(),
  history_mode: z.enum(["legacy", "paginated"]).optional(),
});

const SandboxPolicySchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("danger-full-access") }),
  z.looseObject({ type: z.literal("read-only") }),
  z.looseObject({ type: z.literal("external-sandbox"), network_access: z.enum(["restricted", "enabled"]).optional() }),
  z.looseObject({
    type: z.literal("workspace-write"),
    writable_roots: z.array(z.string()).optional(),
    network_access: z.boolean().optional(),
    exclude_tmpdir_env_var: z.boolean().optional(),
    exclude_slash_tmp: z.boolean().optional(),
  }),
]);

export const CodexTurnContextSchema = z.looseObject({
  turn_id: Uuid,
  cwd: z.string(),
  approval_policy: z.enum(["untrusted", "on-failure", "on-request", "never"]),
  sandbox_policy: SandboxPolicySchema,
  model: z.string(),
  summary: z.string(),
});

/**
 * What would stop `codex resume` on this file, one message per problem (empty: none).
 * `providers`: the provider ids the resuming Codex has configured (its built-ins by default).
 */
export function codexProblems(text: string, providers: readonly string[] = CODEX_PROVIDER_IDS): string[] {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const problems: string[] = [];
  const check = (schema: z.ZodType, v: unknown, where: string) => {
    const r = schema.safeParse(v);
    if (!r.success)
      problems.push(`${where}: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    return r.success;
  };
  const parsed = lines.map((l) => JSON.parse(l) as { type: string; payload: unknown; ordinal?: number });
  parsed.forEach((l, i) => check(CodexEnvelopeSchema, l, `line ${i + 1}`));
  const first = parsed[0];
  if (first?.type !== "session_meta") return [...problems, "line 1 is not a session_meta"];
  if (check(CodexSessionMetaSchema, first.payload, "line 1 session_meta")) {
    const provider = (first.payload as { model_provider?: string }).model_provider;
    if (provider !== undefined && !providers.includes(provider))
      problems.push(
        `line 1 session_meta: model_provider ${JSON.stringify(provider)} is not a provider Codex has configured (${providers.join(", ")})`,
      );
  }
  parsed.forEach(
    (l, i) => l.type === "turn_context" && check(CodexTurnContextSchema, l.payload, `line ${i + 1} turn_context`),
  );
  if ((first.payload as { history_mode?: string }).history_mode === "paginated") {
    parsed.forEach(
      (l, i) =>
        l.ordinal !== i && problems.push(`line ${i + 1}: a paginated file needs ordinal ${i}, has ${l.ordinal}`),
    );
  }
  return problems;
}
