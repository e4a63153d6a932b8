/** Events a session emits: rendered on a terminal, or printed one JSON object a line with --json. */
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";
import { TokenUsageSchema } from "./usage.ts";

/** What a session says before its first turn: how it started and what it was given. */
const setupEvents = () =>
  [
    /** `forked_from`: the id of the session a fork (`relay run --fork`) copied its history from. */
    z.object({
      type: z.literal("session_started"),
      session_id: z.string(),
      rollout_path: z.string(),
      model: z.string(),
      provider: z.string(),
      cwd: z.string(),
      resumed: z.boolean(),
      forked_from: z.string().optional(),
    }),
    z.object({ type: z.literal("warning"), message: z.string() }),
    /** The AGENTS.md files a new session was given (global first, then repo root down to cwd). */
    z.object({
      type: z.literal("project_docs"),
      files: z.array(z.object({ path: z.string(), bytes: z.number().int(), truncated: z.boolean() })),
    }),
    /** How commands will be confined: the mechanism, anything best effort left out, or why none can run. */
    z.object({
      type: z.literal("sandbox"),
      mode: z.string(),
      mechanism: z.string(),
      gaps: z.array(z.string()),
      refused: z.string().optional(),
    }),
    /** An MCP server's state: starting, ready (with its tool count), failed, exited (mid-session), restarting, closed. */
    z.object({
      type: z.literal("mcp_server"),
      server: z.string(),
      state: z.enum(["starting", "ready", "failed", "exited", "restarting", "closed"]),
      message: z.string().optional(),
      tools: z.number().int().optional(),
    }),
  ] as const;

/** What a turn says while it runs, and how it ends. */
const turnEvents = () =>
  [
    z.object({ type: z.literal("turn_started"), turn: z.number().int() }),
    z.object({ type: z.literal("text_delta"), delta: z.string() }),
    z.object({ type: z.literal("reasoning_delta"), delta: z.string() }),
    z.object({ type: z.literal("assistant_message"), text: z.string() }),
    z.object({ type: z.literal("tool_call"), call_id: z.string(), name: z.string(), display: z.string() }),
    /** `full_output_path`: where the whole output went when `output` (what the model read) is cut. */
    z.object({
      type: z.literal("tool_result"),
      call_id: z.string(),
      name: z.string(),
      success: z.boolean(),
      output: z.string(),
      full_output_path: z.string().optional(),
    }),
    /** A model request failed before any output and is sent again: retry `attempt` of at most `max_retries`, after `delay_ms`. */
    /** `discarded_partial`: the text streamed before the failure is dropped; the retry streams the answer anew. */
    z.object({
      type: z.literal("retrying"),
      attempt: z.number().int(),
      max_retries: z.number().int(),
      delay_ms: z.number(),
      reason: z.string(),
      discarded_partial: z.boolean().optional(),
    }),
    /** Heartbeat: the model request in flight has produced nothing for `seconds` (first after 3 s, then every 5 s). */
    z.object({ type: z.literal("waiting"), seconds: z.number().int().nonnegative() }),
    z.object({
      type: z.literal("token_usage"),
      usage: TokenUsageSchema,
      context_tokens: z.number().int(),
      context_window: z.number().int(),
    }),
    /** `summary`: the handoff summary the history was compacted to (absent when the summary turn failed). */
    z.object({
      type: z.literal("context_compacted"),
      tokens_before: z.number().int(),
      items_before: z.number().int(),
      items_after: z.number().int(),
      fallback: z.boolean(),
      summary: z.string().optional(),
    }),
    z.object({
      type: z.literal("turn_completed"),
      turn: z.number().int(),
      final_message: z.string(),
      steps: z.number().int(),
    }),
    z.object({ type: z.literal("turn_aborted"), reason: z.string() }),
    /** The server refused the turn's structured-output request; this session goes on prompt-only. */
    z.object({ type: z.literal("structured_output_unsupported"), reason: z.string() }),
    z.object({ type: z.literal("error"), code: z.string(), message: z.string() }),
  ] as const;

export const SessionEventSchema = lazySchema(() => z.discriminatedUnion("type", [...setupEvents(), ...turnEvents()]));
export type SessionEvent = z.infer<typeof SessionEventSchema>;
export type EmitEvent = (e: SessionEvent) => void;
