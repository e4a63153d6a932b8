/**
 * `RELAY_HOME/config.toml`: optional (a missing file means all defaults). Every error is a value
 * whose message names the file and the offending line/column (syntax) or key path (schema), ready
 * for the CLI to print before exiting 2. Unknown keys are warnings, not errors.
 */
import { readFile } from "node:fs/promises";
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";
import { SandboxMechanismSchema, SandboxModeSchema } from "../contracts/sandbox-policy.ts";
import { configPath, relayHome } from "../home/home.ts";
import { ModelProviderSchema } from "../model/factory.ts";
import { DEFAULT_IDLE_TIMEOUT_MS } from "../model/http.ts";
import { POSTGRES_URL } from "../postgres/url.ts";
import { fastParse, fastParseOrThrow, withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, ok, type Result } from "../util/result.ts";
import { envVarName, httpUrl } from "../util/schema-fields.ts";
import { describeIssues, type SchemaIssue } from "../util/schema-issues.ts";
import { UserApprovalRuleSchema } from "./approval-rules.ts";
import { CapabilityRootConfigSchema } from "./capability-root.ts";
import * as checks from "./config-checks.generated.ts";
import { EnvironmentsConfigSchema } from "./environment-spec.ts";
import { memoriesKeyWarnings } from "./memories-keys.ts";
import { unknownKeysIn } from "./unknown-keys.ts";

export { type ModelProvider, ModelProviderSchema } from "../model/factory.ts";
/** The approval policies, as a list a command line's choices take without building the schema. */
export const APPROVAL_POLICIES = ["untrusted", "on-request", "never"] as const;
export const ApprovalPolicySchema = lazySchema(() => z.enum(APPROVAL_POLICIES));
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

const nonEmpty = lazySchema(() => z.string().min(1));
const posInt = lazySchema(() => z.number().int().positive());
const nonNegInt = lazySchema(() => z.number().int().nonnegative());

export const ShellConfigSchema = lazySchema(() =>
  z.object({
    /** Shell binary; unset = the user's login shell / platform default. */
    path: nonEmpty.optional(),
    /** Run commands through a login shell (`-l`). */
    login: z.boolean().default(false),
  }),
);

export const ExecConfigSchema = lazySchema(() =>
  z.object({
    max_output_tokens: posInt.default(10_000),
    yield_time_ms: nonNegInt.default(10_000),
  }),
);

/** `[sandbox]`: how the sandbox mode is enforced. */
export const SandboxConfigSchema = lazySchema(() =>
  z.object({
    /** auto: the built-in Landlock sandbox, else bubblewrap; or force one of them. */
    mechanism: SandboxMechanismSchema.default("auto"),
    /** Run with weaker enforcement when the kernel lacks a feature (said in the session header). */
    best_effort: z.boolean().default(false),
  }),
);

export const DEFAULT_MODEL = "gpt-5.1-codex";

/**
 * One infty role's own model (`[infty.roles.solver]`, `.director`, `.verifier`); a key left out
 * falls back to the top-level one. Validated here with the rest of the file (key paths in errors).
 */
export const RoleModelConfigSchema = lazySchema(() =>
  z.object({
    model: nonEmpty.optional(),
    model_provider: ModelProviderSchema.optional(),
    base_url: httpUrl.optional(),
    api_key_env: envVarName.optional(),
    model_reasoning_effort: nonEmpty.optional(),
  }),
);
export type RoleModelConfig = z.infer<typeof RoleModelConfigSchema>;

/** `[infty]`: settings of `relay infty` runs. */
export const InftyConfigSchema = lazySchema(() =>
  z.object({
    /** The fleet DB (`postgres://…`) submit, worker, list and workers use; RELAY_INFTY_DB and --db win. */
    db: z.string().regex(POSTGRES_URL, "a postgres:// or postgresql:// URL").optional(),
    roles: z
      .object({
        solver: RoleModelConfigSchema.optional(),
        director: RoleModelConfigSchema.optional(),
        /** Every Verifier; `--verifier-model` (repeatable) mixes a pool. */
        verifier: RoleModelConfigSchema.optional(),
      })
      .optional(),
  }),
);

export const RelayConfigSchema = lazySchema(() =>
  z.object({
    model: nonEmpty.default(DEFAULT_MODEL),
    model_provider: ModelProviderSchema.default("openai-responses"),
    base_url: httpUrl.optional(),
    /** Name of the environment variable that holds the API key (never the key itself). */
    api_key_env: envVarName.default("OPENAI_API_KEY"),
    /**
     * The Codex provider id a rollout records (`session_meta.model_provider`), so `codex resume`
     * takes the session: the `[model_providers.<id>]` key Codex is configured with. Unset: openai,
     * or ollama / lmstudio when the base URL is on their default local port.
     */
    codex_provider_id: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+$/, "must be a Codex provider id such as openai or a [model_providers.<id>] key")
      .optional(),
    /** Responses API reasoning effort (e.g. low, medium, high); unset = the model's default. */
    model_reasoning_effort: nonEmpty.optional(),
    model_reasoning_summary: z.enum(["auto", "concise", "detailed"]).optional(),
    approval_policy: ApprovalPolicySchema.default("on-request"),
    /** `[[approval_rules]]`: command prefixes untrusted runs without asking, or always asks (approval-rules.ts). */
    approval_rules: z.array(UserApprovalRuleSchema).default([]),
    sandbox_mode: SandboxModeSchema.default("workspace-write"),
    sandbox: SandboxConfigSchema.default({ mechanism: "auto", best_effort: false }),
    /** Model server silence (before the reply or between stream chunks) that counts as a stalled stream and is retried; 0 = never. */
    stream_idle_timeout_ms: nonNegInt.default(DEFAULT_IDLE_TIMEOUT_MS),
    /** Context window in tokens; unset = the provider's known value, if any. */
    model_context_window: posInt.optional(),
    /** Auto-compact when used tokens reach this fraction of the context window. */
    auto_compact_fraction: z.number().gt(0).lte(1).default(0.9),
    shell: ShellConfigSchema.default({ login: false }),
    exec: ExecConfigSchema.default({ max_output_tokens: 10_000, yield_time_ms: 10_000 }),
    /** Command line that starts a remote executor (speaks the protocol on stdio). */
    executor: nonEmpty.optional(),
    /** `[environments.NAME] command = "..."`: extra executors (environments) for capabilities. */
    environments: EnvironmentsConfigSchema.optional(),
    /** `[[capability_roots]]` (id, environment, path): where skills are discovered, on which environment. */
    capability_roots: z.array(CapabilityRootConfigSchema).optional(),
    /** AGENTS.md bytes read from the workspace (repo root down to cwd); 0 turns them off. */
    project_doc_max_bytes: nonNegInt.default(32_768),
    /** Names tried after AGENTS.override.md and AGENTS.md in each directory, e.g. ["CLAUDE.md"]. */
    project_doc_fallback_filenames: z.array(nonEmpty).default([]),
    /** `[memories]`: its schema is config/memories.ts, read on its own when memories are used (`relay memories`, the read path), so a bad section does not stop a session. */
    memories: z.record(z.string(), z.unknown()).optional(),
    /** `[mcp_servers.NAME]`, in Codex's shape: checked server by server by config/mcp-servers.ts (a broken one does not stop the others). */
    mcp_servers: z.record(z.string(), z.unknown()).optional(),
    /** `[infty.roles.<role>]`: a model per infty role (src/config/infty/role-models.ts applies them). */
    infty: InftyConfigSchema.optional(),
  }),
);
export type RelayConfig = z.infer<typeof RelayConfigSchema>;

/** For scripts/build-validators.ts: config.toml is parsed by every relay command. */
export const CHECKED_SCHEMAS = withChecks(checks, { relayConfig: RelayConfigSchema });

/** Schemas whose keys (through objects) the generated module lists, for unknown-key warnings without zod. */
export const KEY_TREES = { relayConfigKeys: RelayConfigSchema };

export interface LoadedConfig {
  config: RelayConfig;
  /** Human-readable notes (unknown keys); print them, do not fail. */
  warnings: string[];
  path: string;
  /** False when the file does not exist and `config` is all defaults. */
  exists: boolean;
}

/** A problem at a dotted key path, e.g. `shell.login`. */
export type ConfigIssue = SchemaIssue;

export function defaultConfig(): RelayConfig {
  // Through the generated check: an empty home would otherwise build the whole schema for its defaults.
  return fastParseOrThrow(RelayConfigSchema, {});
}

/** Reads `<home>/config.toml`. */
export async function loadConfig(home: string = relayHome()): Promise<Result<LoadedConfig>> {
  const file = configPath(home);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return ok({ config: defaultConfig(), warnings: [], path: file, exists: false });
    return err("config_read", `cannot read ${file}: ${(e as Error).message}`, { path: file });
  }
  return parseConfig(text, file);
}

/** Parses config text; `file` is only used in messages. */
export function parseConfig(text: string, file: string): Result<LoadedConfig> {
  let raw: Record<string, unknown>;
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof TomlError) {
      const reason = (e.message.split("\n")[0] ?? "").replace(/^Invalid TOML document:\s*/, "");
      const snippet = e.codeblock ? `\n${e.codeblock.trimEnd()}` : "";
      return err("config_syntax", `${file}:${e.line}:${e.column}: TOML syntax error: ${reason}${snippet}`, {
        path: file,
        line: e.line,
        column: e.column,
      });
    }
    return err("config_syntax", `${file}: TOML syntax error: ${(e as Error).message}`, { path: file });
  }
  const parsed = fastParse(RelayConfigSchema, raw);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues, raw);
    return err("config_invalid", formatIssues(file, issues), { path: file, issues });
  }
  // From the generated key tree: walking the schema's shapes would build all of it.
  const warnings = [
    ...unknownKeysIn(checks.relayConfigKeys, raw, "").map((w) => `${file}: ${w}`),
    ...memoriesKeyWarnings(raw.memories, file),
  ];
  return ok({ config: parsed.data, warnings, path: file, exists: true });
}

/**
 * Where each override (a flag, or a setting a resume restores) lands in the config, and what it
 * takes: text, a number (given as text on the command line, or as a number), or a switch.
 * Adding a setting: its schema above, its line here, its flag.
 */
const OVERRIDES = {
  model: { path: ["model"], kind: "text" },
  provider: { path: ["model_provider"], kind: "text" },
  base_url: { path: ["base_url"], kind: "text" },
  api_key_env: { path: ["api_key_env"], kind: "text" },
  reasoning_effort: { path: ["model_reasoning_effort"], kind: "text" },
  reasoning_summary: { path: ["model_reasoning_summary"], kind: "text" },
  approval_policy: { path: ["approval_policy"], kind: "text" },
  sandbox_mode: { path: ["sandbox_mode"], kind: "text" },
  sandbox_mechanism: { path: ["sandbox", "mechanism"], kind: "text" },
  sandbox_best_effort: { path: ["sandbox", "best_effort"], kind: "switch" },
  model_context_window: { path: ["model_context_window"], kind: "number" },
  auto_compact_fraction: { path: ["auto_compact_fraction"], kind: "number" },
  executor: { path: ["executor"], kind: "text" },
  shell_path: { path: ["shell", "path"], kind: "text" },
  shell_login: { path: ["shell", "login"], kind: "switch" },
  max_output_tokens: { path: ["exec", "max_output_tokens"], kind: "number" },
  yield_time_ms: { path: ["exec", "yield_time_ms"], kind: "number" },
  project_doc_max_bytes: { path: ["project_doc_max_bytes"], kind: "number" },
} as const satisfies Record<string, { path: readonly [string] | readonly [string, string]; kind: OverrideKind }>;

type OverrideKind = "text" | "number" | "switch";
type OverrideValue<K extends OverrideKind> = K extends "text" ? string : K extends "number" ? number | string : boolean;

/** Overrides of the config; `undefined` members are ignored. Raw strings are validated like the file. */
export type ConfigOverrides = {
  [K in keyof typeof OVERRIDES]?: OverrideValue<(typeof OVERRIDES)[K]["kind"]>;
};

/** A number given as text ("8000") is read as one; anything else is left for the schema to judge. */
const asNumber = (v: unknown): unknown => (typeof v === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v);

export function applyOverrides(config: RelayConfig, overrides: ConfigOverrides): Result<RelayConfig> {
  const merged: Record<string, unknown> = {
    ...config,
    shell: { ...config.shell },
    exec: { ...config.exec },
    sandbox: { ...config.sandbox },
  };
  for (const [key, { path: where, kind }] of Object.entries(OVERRIDES)) {
    const value = overrides[key as keyof ConfigOverrides];
    if (value === undefined) continue;
    const [top, inner] = where;
    const target = inner === undefined ? merged : (merged[top] as Record<string, unknown>);
    target[inner ?? top] = kind === "number" ? asNumber(value) : value;
  }
  const parsed = fastParse(RelayConfigSchema, merged);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error.issues, merged);
    return err("config_invalid", formatIssues("command-line override", issues), { issues });
  }
  return ok(parsed.data);
}

function formatIssues(source: string, issues: ConfigIssue[]): string {
  if (issues.length === 1) return `${source}: ${issues[0]!.message}`;
  return `${source}: ${issues.length} problems:\n${issues.map((i) => `  - ${i.message}`).join("\n")}`;
}
