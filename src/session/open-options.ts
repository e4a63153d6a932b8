/**
 * What opening a session takes (`SessionRunOptions`, `OpenSessionOptions`), what a session asks
 * of the memory store above it (`SessionMemories`), and what `runSession` returns.
 */

import type { CapabilityRoot } from "../config/capability-root.ts";
import type { RelayConfig } from "../config/config.ts";
import type { EnvironmentSpec } from "../config/environment-spec.ts";
import type { EmitEvent } from "../contracts/events.ts";
import type { ModelClient } from "../model/client.ts";
import type { Approver } from "../policy/approval.ts";
import type { Result } from "../util/result.ts";
import type { TurnOutcome } from "./agent.ts";
import type { HeartbeatSettings } from "./waiting.ts";

export interface SessionRunOptions {
  home: string;
  config: RelayConfig;
  prompt?: string;
  /** A session id, unique id prefix, `last`, or a rollout path. */
  resume?: string;
  /** The same, of a session to fork: a new session starts with a copy of its history. */
  fork?: string;
  cwd?: string;
  scriptPath?: string;
  /** Command line of a remote executor; default: re-exec relay's own `executor`. */
  executorCommand?: string;
  /** Environment name of this session's executor (`local` for the built-in one). */
  executorName?: string;
  capabilityRoots?: CapabilityRoot[];
  /** Extra environments (executor peers) for capabilities, started at open. */
  environments?: EnvironmentSpec[];
  maxSteps?: number;
  approver: Approver;
  emit: EmitEvent;
  signal: AbortSignal;
  source?: string;
  /** Extra developer instructions (e.g. a role prompt, memories). */
  extraInstructions?: string[];
  /** Offer the `exec` (JavaScript) and `wait` tools, run on a code-mode host (`--code-mode`). */
  codeMode?: boolean;
  /**
   * The memory store to inject from and count citations in; none by default. The CLI wires
   * src/memories/read.ts here (the session layer does not reach up into memories).
   */
  memories?: SessionMemories;
  /** Only the cwd is writable: not /tmp, not another workdir (the memory consolidation agent). */
  confineWrites?: boolean;
  /**
   * Exactly these roots are writable under workspace-write (the temp dirs too), whatever the cwd
   * or a call's workdir: an infty role's checkout and the model's part of the run store.
   */
  writableRoots?: string[];
  /** Paths that stay read-only even inside a writable root or temp dir (an infty run's own files). */
  readOnlyPaths?: string[];
  /** Variables added to every command's environment (e.g. RELAY_RUN_STORE for infty roles). */
  env?: Record<string, string>;
  /** The infty run and role this session is (recorded in its session_meta; `source` is then "infty"). */
  infty?: { runId: string; role: string };
  /** Where a new session's rollout goes (default: $RELAY_HOME/sessions/YYYY/MM/DD). */
  rolloutDir?: string;
  /** How a person continues this session after a failed turn (default: relay run --resume <id>). */
  resumeCommand?: string;
  /** Give a new session the AGENTS.md files (default true; off for the memory consolidation agent). */
  projectDocs?: boolean;
  /** Offer the local skills ($RELAY_HOME/skills, the repository's .relay/skills; default true). */
  localSkills?: boolean;
  /** When `waiting` heartbeats come while the model is silent (default: after 3 s, then every 5 s). */
  heartbeat?: HeartbeatSettings;
}

export interface SessionRunResult {
  sessionId: string;
  rolloutPath: string;
  outcome: TurnOutcome;
}

export interface OpenSessionOptions extends Omit<SessionRunOptions, "prompt" | "signal"> {
  /** A model client to use instead of building one from config (e.g. a scripted role). */
  model?: ModelClient;
  /** The prompt the first turn will get; only used to find `$skill` mentions and to validate. */
  firstPrompt?: string;
  /** Require a prompt for a new session (true for `relay run`). */
  requirePrompt?: boolean;
}

/** What a session asks of the memory store above it. */
export interface SessionMemories {
  /** The block added to the developer instructions (the memory summary), if any, and why there is none when something failed. */
  block(home: string): Promise<{ text?: string; warning?: string }>;
  /** Counts the memory citations in a turn's final message; how many were recorded. */
  recordCitations(home: string, finalMessage: string): Promise<Result<number>>;
}
