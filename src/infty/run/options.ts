/**
 * What a run is given and what it reports: the options of `runInfty`, its progress events and
 * result, and the scripted-run file (one script per role) with the models it makes.
 */

import { z } from "zod";
import type { RelayConfig } from "../../config/config.ts";
import { verifierNumber } from "../../config/infty/index.ts";
import type { SessionChoices } from "../../config/resume-settings.ts";
import type { SessionEvent } from "../../contracts/events.ts";
import type { ModelClient } from "../../model/client.ts";
import type { ResponseItem } from "../../model/items.ts";
import { createScriptedClient, ScriptSchema } from "../../model/scripted.ts";
import type { SessionMemories } from "../../session/runtime.ts";
import { parseJsonWith } from "../../util/json.ts";
import { lazySchema } from "../../util/lazy-schema.ts";
import { ok, type Result } from "../../util/result.ts";
import type { RoleActivity } from "../activity.ts";
import type { CheckpointTrigger } from "../checkpoint-format.ts";
import type { RunLease } from "../lease.ts";
import type { RepoRequest } from "../repo/repository.ts";
import { scriptTurnsUsed } from "../scripted-resume.ts";

export const InftyScriptSchema = lazySchema(() =>
  z.strictObject({
    solver: ScriptSchema,
    director: ScriptSchema.optional(),
    verifiers: z.array(ScriptSchema).default([]),
  }),
);

/** What the orchestrator reports while it works (rendered as progress lines or JSONL). */
export type InftyEvent =
  | {
      type: "run_started";
      run_id: string;
      dir: string;
      resumed: boolean;
      objective: string;
      repo?: { path: string; branch: string; checkout: string; base_commit: string };
    }
  | { type: "role_event"; role: string; event: SessionEvent }
  | { type: "handoff"; from: string; to: string; summary: string }
  | { type: "verdict"; role: string; verdict: "pass" | "fail"; reasons: string[] }
  | { type: "verification_summary"; overall: "pass" | "fail"; passes: number; total: number }
  | { type: "checkpoint"; name: string; trigger: CheckpointTrigger; summary: string }
  | {
      type: "heartbeat";
      turns: number;
      max_turns: number;
      elapsed_ms: number;
      last_activity: string;
      tokens_used: number;
      max_tokens: number | null;
      roles: RoleActivity[];
    }
  | { type: "warning"; message: string }
  | { type: "pushed"; remote: string; branch: string; commit: string }
  | {
      type: "run_finished";
      run_id: string;
      status: string;
      detail: string;
      deliverable?: string;
      summary?: string | null;
    };

export interface InftyOptions {
  home: string;
  config: RelayConfig;
  objective?: string;
  runId?: string;
  /** Continue an existing run instead of creating one. */
  resume?: boolean;
  verifiers?: number;
  consensus?: "all" | "majority";
  maxTurns?: number;
  maxWallMs?: number;
  /** false: no role is asked for structured output, for the rest of the run (default true). */
  structuredOutput?: boolean;
  /** Tokens all roles may use together; the run stops cleanly (resumable) when they are used up. */
  maxTokens?: number;
  /** How long a Director or Verifier may take for one answer. */
  roleTimeoutMs?: number;
  /** Nudges to a Solver that stops without a signal before the Director is asked to step in. */
  maxNudges?: number;
  heartbeatMs?: number;
  /**
   * A model per role (scripted runs); default: from config. `history` is given for a resumed
   * role: its session's history, readable from the first request on.
   */
  modelFor?: (role: string, history?: () => readonly ResponseItem[]) => ModelClient | undefined;
  report: (e: InftyEvent) => void;
  signal: AbortSignal;
  /** End the run at the first failed tool call, naming it (scripted demos, CI). */
  failOnToolError?: boolean;
  /** The memory store the roles' sessions inject from (wired by the CLI). */
  memories?: SessionMemories;
  /** Each role's configuration (its own model; src/config/infty/role-models.ts); default: `config`. */
  roleConfig?: (role: string) => RelayConfig;
  /** The roles' tools: code mode, capability roots, the executor's name (as for relay run). */
  tools?: SessionChoices;
  /** A new run on a repository (its own branch and checkout); absent: the run store only. */
  repo?: RepoRequest;
  /** The lease that makes this process the run's one driver; default: a file in the run store. */
  lease?: (runDir: string, runId: string) => RunLease;
  /** Set when `lease` is the fleet's: its DB, for the child processes that check the lease (packing). */
  fleetDb?: string;
}

export interface InftyResult {
  runId: string;
  dir: string;
  status: "complete" | "failed" | "interrupted" | "budget_exhausted";
  detail: string;
  deliverable?: string;
  summary?: string | null;
  /** A run on a repository: its branch and the commit the Verifiers passed. */
  branch?: string;
  commit?: string;
  /** --push: where the verified commit went, or why it could not (the run is complete either way). */
  pushed?: { remote: string; branch: string; commit: string };
  pushError?: string;
}

/** Loads a scripted-run file: one script per role; a resumed role goes on where its session stopped. */
export function scriptedModels(text: string, file: string): Result<NonNullable<InftyOptions["modelFor"]>> {
  const parsed = parseJsonWith(InftyScriptSchema, text, file, {
    code: "invalid_script",
    invalid: "is not an infty script ({solver, director?, verifiers[]})",
  });
  if ("error" in parsed) return parsed;
  const s = parsed.ok;
  const clients = new Map<string, ModelClient>();
  return ok((role, history) => {
    let c = clients.get(role);
    if (c) return c;
    const script =
      role === "solver"
        ? s.solver
        : role === "director"
          ? s.director
          : (s.verifiers[verifierNumber(role) - 1] ?? s.verifiers.at(-1));
    if (!script) return undefined;
    c = createScriptedClient({
      script,
      scriptPath: `${file} (${role})`,
      startAt: history ? () => scriptTurnsUsed(history(), script.turns) : 0,
    });
    clients.set(role, c);
    return c;
  });
}
