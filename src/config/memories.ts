/** `[memories]` in RELAY_HOME/config.toml, read on its own so the main config stays untouched. */
import { readFile } from "node:fs/promises";
import { parse as parseToml } from "smol-toml";
import { z } from "zod";
import { configPath, stateDbPath } from "../home/home.ts";
import { SourceNameSchema } from "../rollout/sources.ts";
import { fastParse, fastParseOrThrow, withChecks } from "../util/fast-parse.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { err, errorMessage, ok, type Result } from "../util/result.ts";
import * as checks from "./memories-checks.generated.ts";
import { memoriesKeyWarnings } from "./memories-keys.ts";

/**
 * The bounded settings' ranges: a value outside one is taken as its nearest bound (clamped after
 * the parse, not by a transform, so the generated check decides the whole section without zod).
 */
const RANGES = {
  max_raw_memories_for_consolidation: [1, 4096],
  max_unused_days: [0, 365],
  max_rollout_age_days: [0, 90],
  max_rollouts_per_run: [1, 512],
  max_rollouts_per_startup: [1, 128],
  min_startup_interval_seconds: [0, 7 * 86_400],
  min_rollout_idle_hours: [0, 48],
  max_running_jobs: [1, 256],
  extract_concurrency: [1, 64],
  summary_max_tokens: [100, 20_000],
  phase2_cooldown_seconds: [0, 7 * 86_400],
} as const satisfies Record<string, readonly [number, number]>;

const intOr = (dflt: number) => z.number().int().default(dflt);

export const MemorySettingsSchema = lazySchema(() =>
  z.object({
    /** Inject memory_summary.md into new sessions. */
    use_memories: z.boolean().default(true),
    /** Run a background phase 1 + phase 2 pass when a `relay run` session starts (startup.ts). */
    generate_memories: z.boolean().default(true),
    max_raw_memories_for_consolidation: intOr(256),
    max_unused_days: intOr(30),
    max_rollout_age_days: intOr(10),
    max_rollouts_per_run: intOr(16),
    /** Claims of one start-up pass (the reference's default and range). */
    max_rollouts_per_startup: intOr(2),
    /**
     * Seconds between two start-up passes, recorded in the state DB. The reference skips a pass
     * when the account's rate limit is low; relay has no rate-limit data, so it spaces passes.
     */
    min_startup_interval_seconds: intOr(3_600),
    min_rollout_idle_hours: intOr(6),
    /** Cross-process cap on running phase 1 jobs (independent of the per-run claim count). */
    max_running_jobs: intOr(16),
    extract_concurrency: intOr(8),
    /** Phase 1 and phase 2 engines when no flag says (cron) and at start-up; auto: see engines.ts. */
    extractor: z.enum(["auto", "model", "heuristic"]).default("auto"),
    consolidator: z.enum(["auto", "agent", "heuristic"]).default("auto"),
    extract_model: z.string().min(1).optional(),
    consolidation_model: z.string().min(1).optional(),
    /** Read-path budget for memory_summary.md. */
    summary_max_tokens: intOr(2_500),
    /** Seconds between successful consolidations. */
    phase2_cooldown_seconds: intOr(0),
    /** Session sources phase 1 reads (`--sources`); unset = cli and vscode, see rollout/sources.ts. */
    sources: z.array(SourceNameSchema).min(1).optional(),
    /** State DB: a postgres:// URL; unset = SQLite at RELAY_HOME/state.sqlite. */
    db: z.string().min(1).optional(),
  }),
);
export type MemorySettings = z.infer<typeof MemorySettingsSchema>;

/** For scripts/build-validators.ts. */
export const CHECKED_SCHEMAS = withChecks(checks, { memorySettings: MemorySettingsSchema });

/** Schemas whose keys the generated module lists, for unknown-key warnings without zod. */
export const KEY_TREES = { memorySettingsKeys: MemorySettingsSchema };

/** `--db`, else $RELAY_MEMORIES_DB, else `[memories] db`, else RELAY_HOME/state.sqlite. */
export function stateDbSpec(
  home: string,
  settings: Pick<MemorySettings, "db">,
  explicit?: string,
  env: Record<string, string | undefined> = process.env,
): string {
  return explicit?.trim() || env.RELAY_MEMORIES_DB?.trim() || settings.db || stateDbPath(home);
}

export function defaultMemorySettings(): MemorySettings {
  return clamped(fastParseOrThrow(MemorySettingsSchema, {}));
}

/** `settings` with each bounded value within its range. */
function clamped(settings: MemorySettings): MemorySettings {
  const out = { ...settings };
  for (const [key, [lo, hi]] of Object.entries(RANGES) as Array<[keyof typeof RANGES, readonly [number, number]]>)
    out[key] = Math.min(hi, Math.max(lo, out[key]));
  return out;
}

export async function loadMemorySettings(home: string): Promise<Result<MemorySettings>> {
  const r = await loadMemorySettingsWithWarnings(home);
  return "error" in r ? r : ok(r.ok.settings);
}

/** loadMemorySettings, and the section's unknown keys (memories-keys.ts) for the caller to print. */
export async function loadMemorySettingsWithWarnings(
  home: string,
): Promise<Result<{ settings: MemorySettings; warnings: string[] }>> {
  const file = configPath(home);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return ok({ settings: defaultMemorySettings(), warnings: [] });
    return err("config_read", `cannot read ${file}: ${errorMessage(e)}`);
  }
  let raw: Record<string, unknown>;
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    return err("config_syntax", `${file}: ${errorMessage(e).split("\n")[0]}`);
  }
  const settings = parseMemorySettings(raw.memories ?? {}, file);
  return "error" in settings
    ? settings
    : ok({ settings: settings.ok, warnings: memoriesKeyWarnings(raw.memories, file) });
}

/** `max_rollouts_per_run` above `max_running_jobs`, which it cannot reach. */
export interface ClaimsCapped {
  max_rollouts: number;
  max_running_jobs: number;
}

/**
 * Whether the cap on running phase 1 jobs caps this run's claims: a run's own claims count as
 * running until it ends, so one run claims at most `max_running_jobs` rollouts.
 */
export function claimsCapped(
  s: Pick<MemorySettings, "max_rollouts_per_run" | "max_running_jobs">,
): ClaimsCapped | undefined {
  if (s.max_rollouts_per_run <= s.max_running_jobs) return undefined;
  return { max_rollouts: s.max_rollouts_per_run, max_running_jobs: s.max_running_jobs };
}

/** `[memories]` as already read from `file` (e.g. `RelayConfig.memories`). */
export function parseMemorySettings(section: unknown, file: string): Result<MemorySettings> {
  const r = fastParse(MemorySettingsSchema, section);
  if (!r.success) return err("config_invalid", `${file}: [memories]: ${z.prettifyError(r.error)}`);
  return ok(clamped(r.data));
}
