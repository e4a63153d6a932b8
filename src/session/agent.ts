/**
 * One agent session: user turns, model sampling, tool calls, persistence and compaction.
 * Every item goes to the rollout as soon as it exists, so a crash loses at most the step in
 * flight, and `--resume` continues from the file.
 */

import type { EmitEvent } from "../contracts/events.ts";
import type { TokenUsage } from "../contracts/usage.ts";
import { type ModelClient, ModelError, type OutputSchema } from "../model/client.ts";
import {
  assistantMessage,
  developerMessage,
  type FunctionCallItem,
  type MessageItem,
  messageText,
  type ResponseItem,
  userMessage,
} from "../model/items.ts";
import { uuidv7 } from "../rollout/ids.ts";
import type { TurnContext } from "../rollout/schema.ts";
import type { RolloutWriter } from "../rollout/writer.ts";
import type { Result } from "../util/result.ts";
import { estimateTokens } from "../util/truncate.ts";
import { buildCompactedHistory, pruneToolOutputs, summarize, USER_MESSAGE_BUDGET_TOKENS } from "./compaction.ts";
import type { ToolRouter } from "./tool-router.ts";

export interface AgentOptions {
  model: ModelClient;
  modelName: string;
  router: ToolRouter;
  rollout: RolloutWriter;
  instructions: string;
  developerInstructions: string;
  contextWindow: number;
  autoCompactFraction: number;
  /** Model requests allowed per user turn. */
  maxSteps: number;
  turnContext: Omit<TurnContext, "model">;
  emit: EmitEvent;
}

/** What a caller asks of one turn beyond its prompt. */
export interface TurnOptions {
  /** The turn's messages must be JSON of this schema (sent as strict structured output while the server takes it). */
  outputSchema?: OutputSchema;
}

/**
 * The session record (the rollout) could not be written: the session stops at once, since
 * anything it did after this would be missing from the record a resume continues from.
 */
export class RecordError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = "RecordError";
  }
}

export type TurnStatus = "completed" | "max_steps" | "aborted";

export interface TurnOutcome {
  status: TurnStatus;
  finalMessage: string;
  steps: number;
}

/** What a history can continue without a new prompt: a turn cut off after a prompt or a tool call. */
export function pendingWorkIn(history: readonly ResponseItem[]): "none" | "continue" {
  const last = history.at(-1);
  if (!last) return "none";
  if (last.type === "function_call_output" || last.type === "function_call") return "continue";
  if (last.type === "message" && (last as MessageItem).role === "user") return "continue";
  return "none";
}

export class AgentSession {
  history: ResponseItem[];
  private turn = 0;
  /** Tokens the last request used, the best estimate of the context size. */
  private contextTokens = 0;
  /** Set once the server refused a structured-output request: later turns send none. */
  private structuredOutputRefused = false;

  constructor(
    private readonly o: AgentOptions,
    initialHistory: ResponseItem[] = [],
  ) {
    this.history = [...initialHistory];
    this.contextTokens = estimateTokens(JSON.stringify(initialHistory));
  }

  get compactLimit(): number {
    return Math.floor(this.o.contextWindow * this.o.autoCompactFraction);
  }

  /** What a resumed session can continue without a new prompt. */
  pendingWork(): "none" | "continue" {
    return pendingWorkIn(this.history);
  }

  /** Gives every call left without an output (a crash mid-call) an output saying so. */
  async repairDanglingCalls(): Promise<number> {
    const answered = new Set(
      this.history.filter((i) => i.type === "function_call_output").map((i) => (i as { call_id: string }).call_id),
    );
    const missing = this.history.filter(
      (i): i is FunctionCallItem => i.type === "function_call" && !answered.has((i as FunctionCallItem).call_id),
    );
    for (const call of missing) {
      await this.record([
        {
          type: "function_call_output",
          call_id: call.call_id,
          output: "aborted: the previous run ended before this tool call finished; check the state before retrying it",
        },
      ]);
    }
    return missing.length;
  }

  async runTurn(
    prompt: string | undefined,
    signal: AbortSignal,
    preamble: ResponseItem[] = [],
    opts: TurnOptions = {},
  ): Promise<TurnOutcome> {
    this.turn++;
    this.o.emit({ type: "turn_started", turn: this.turn });
    // Each turn has its own id, as Codex's turns do (it reads turn_id to rebuild a thread's turns).
    await this.keep(
      this.o.rollout.append([
        {
          type: "turn_context",
          payload: { turn_id: uuidv7(), ...this.o.turnContext, model: this.o.modelName } as TurnContext,
        },
      ]),
    );
    if (preamble.length) await this.record(preamble);
    if (prompt !== undefined) {
      await this.record([userMessage(prompt)]);
      await this.keep(this.o.rollout.appendEvents([{ type: "user_message", message: prompt }]));
    }
    let steps = 0;
    let finalMessage = "";
    while (steps < this.o.maxSteps) {
      if (signal.aborted) return this.aborted(steps, finalMessage);
      if (this.contextTokens >= this.compactLimit) await this.compact(signal);
      steps++;
      let items: ResponseItem[];
      try {
        items = await this.sampleWith(opts.outputSchema, signal);
      } catch (e) {
        if (signal.aborted) return this.aborted(steps, finalMessage);
        if (e instanceof ModelError && e.code === "context_window") {
          await this.compact(signal, true);
          continue;
        }
        throw e;
      }
      const calls = items.filter((i): i is FunctionCallItem => i.type === "function_call");
      const text = items
        .filter((i): i is MessageItem => i.type === "message" && (i as MessageItem).role === "assistant")
        .map(messageText)
        .join("\n");
      if (text) {
        finalMessage = text;
        this.o.emit({ type: "assistant_message", text });
        await this.keep(this.o.rollout.appendEvents([{ type: "agent_message", message: text }]));
      }
      const custom = items.filter((i) => i.type === "custom_tool_call");
      for (const item of custom) {
        const c = item as { call_id: string; name: string; input: string };
        this.o.emit({ type: "tool_call", call_id: c.call_id, name: c.name, display: c.input.slice(0, 80) });
        const out = await this.o.router.callCustom(c.name, c.input, c.call_id, signal);
        this.o.emit({
          type: "tool_result",
          call_id: c.call_id,
          name: c.name,
          success: out.success,
          output: out.output,
        });
        await this.record([{ type: "custom_tool_call_output", call_id: c.call_id, output: out.output }]);
      }
      if (calls.length === 0 && custom.length === 0) {
        this.o.emit({ type: "turn_completed", turn: this.turn, final_message: finalMessage, steps });
        await this.keep(this.o.rollout.appendEvents([{ type: "task_complete", last_agent_message: finalMessage }]));
        await this.keep(this.o.rollout.flush());
        return { status: "completed", finalMessage, steps };
      }
      await this.runCalls(calls, signal);
      if (signal.aborted) return this.aborted(steps, finalMessage);
    }
    this.o.emit({
      type: "warning",
      message: `stopped after ${steps} model requests in this turn (--max-steps); resume the session to let it continue`,
    });
    await this.keep(this.o.rollout.flush());
    return { status: "max_steps", finalMessage, steps };
  }

  private async aborted(steps: number, finalMessage: string): Promise<TurnOutcome> {
    this.o.emit({ type: "turn_aborted", reason: "interrupted" });
    await this.keep(this.o.rollout.appendEvents([{ type: "turn_aborted", reason: "interrupted" }]));
    await this.keep(this.o.rollout.flush());
    return { status: "aborted", finalMessage, steps };
  }

  private async record(items: ResponseItem[]): Promise<void> {
    this.history.push(...items);
    await this.keep(this.o.rollout.appendItems(items));
  }

  /** Awaits a write of the session record; a failed one stops the session (RecordError). */
  private async keep(write: Promise<Result<null>>): Promise<void> {
    const r = await write;
    if ("error" in r) throw new RecordError(r.error.message, this.o.rollout.path);
  }

  /**
   * Samples with the turn's output schema while the server takes it. A request the server
   * rejects (HTTP 4xx) is sent once more without the schema; if that one goes through, the
   * schema was the problem: the session says so once and sends no schema from then on.
   */
  private async sampleWith(schema: OutputSchema | undefined, signal: AbortSignal): Promise<ResponseItem[]> {
    if (!schema || this.structuredOutputRefused) return this.sample(signal);
    try {
      return await this.sample(signal, schema);
    } catch (e) {
      // Only an HTTP refusal (it has a status) came before any output; an in-stream error may not have.
      if (!(e instanceof ModelError && e.code === "bad_request" && e.status !== undefined) || signal.aborted) throw e;
      const items = await this.sample(signal);
      this.structuredOutputRefused = true;
      this.o.emit({ type: "structured_output_unsupported", reason: e.message });
      return items;
    }
  }

  private async sample(signal: AbortSignal, outputSchema?: OutputSchema): Promise<ResponseItem[]> {
    const items: ResponseItem[] = [];
    let text = "";
    let usage: TokenUsage | undefined;
    const input = [developerMessage(this.o.developerInstructions), ...this.history];
    const request = {
      model: this.o.modelName,
      instructions: this.o.instructions,
      input,
      tools: this.o.router.modelTools(),
      parallelToolCalls: true,
    };
    for await (const e of this.o.model.stream(outputSchema ? { ...request, outputSchema } : request, signal)) {
      if (e.type === "text_delta") {
        text += e.delta;
        this.o.emit({ type: "text_delta", delta: e.delta });
      } else if (e.type === "reasoning_delta") {
        this.o.emit({ type: "reasoning_delta", delta: e.delta });
      } else if (e.type === "item") {
        items.push(e.item);
        // Persist as each item completes: a crash after this keeps it.
        await this.record([e.item]);
      } else if (e.type === "retrying") {
        if (e.discardPartial) text = "";
        this.o.emit({
          type: "retrying",
          attempt: e.attempt,
          max_retries: e.maxRetries,
          delay_ms: e.delayMs,
          reason: e.reason,
          ...(e.discardPartial ? { discarded_partial: true } : {}),
        });
      } else if (e.type === "completed") {
        usage = e.usage;
      }
    }
    // Some servers stream text without a final message item.
    if (text && !items.some((i) => i.type === "message")) {
      const msg = assistantMessage(text);
      items.push(msg);
      await this.record([msg]);
    }
    this.contextTokens =
      usage?.total_tokens ?? estimateTokens(JSON.stringify(input)) + estimateTokens(JSON.stringify(items));
    if (usage) {
      this.o.emit({
        type: "token_usage",
        usage,
        context_tokens: this.contextTokens,
        context_window: this.o.contextWindow,
      });
      await this.keep(
        this.o.rollout.appendEvents([
          { type: "token_count", info: { last_token_usage: usage, model_context_window: this.o.contextWindow } },
        ]),
      );
    }
    return items;
  }

  /** Runs calls in order; consecutive read-only calls run together. */
  private async runCalls(calls: FunctionCallItem[], signal: AbortSignal): Promise<void> {
    let i = 0;
    while (i < calls.length) {
      const batch = [calls[i]!];
      if (this.o.router.isReadOnly(calls[i]!.name)) {
        while (i + batch.length < calls.length && this.o.router.isReadOnly(calls[i + batch.length]!.name))
          batch.push(calls[i + batch.length]!);
      }
      const outcomes = await Promise.all(
        batch.map(async (call) => {
          this.o.emit({ type: "tool_call", call_id: call.call_id, name: call.name, display: displayOf(call) });
          const out = await this.o.router.call(call.name, call.arguments, signal, call.call_id);
          this.o.emit({
            type: "tool_result",
            call_id: call.call_id,
            name: call.name,
            success: out.success,
            output: out.output,
            ...(out.fullOutputPath ? { full_output_path: out.fullOutputPath } : {}),
          });
          return { call, out };
        }),
      );
      await this.record(
        outcomes.map(({ call, out }) => ({
          type: "function_call_output" as const,
          call_id: call.call_id,
          output: out.output,
        })),
      );
      i += batch.length;
      if (signal.aborted) return;
    }
  }

  private async compact(signal: AbortSignal, forced = false): Promise<void> {
    const before = this.history.length;
    const tokensBefore = this.contextTokens;
    let next: ResponseItem[];
    let summary = "";
    let fallback = false;
    try {
      summary = await summarize(
        this.o.model,
        { model: this.o.modelName, instructions: this.o.instructions },
        this.history,
        signal,
      );
      // Kept user messages get at most a quarter of the limit, or compaction could not get under it.
      next = buildCompactedHistory(
        this.history,
        summary,
        Math.min(USER_MESSAGE_BUDGET_TOKENS, Math.floor(this.compactLimit / 4)),
      );
    } catch (e) {
      if (signal.aborted) throw e;
      this.o.emit({
        type: "warning",
        message: `compaction's summary turn failed (${(e as Error).message}); emptied older tool outputs instead`,
      });
      next = pruneToolOutputs(this.history);
      fallback = true;
    }
    this.history = next;
    this.contextTokens = estimateTokens(JSON.stringify(next));
    await this.keep(
      this.o.rollout.append([{ type: "compacted", payload: { message: summary, replacement_history: next } }]),
    );
    await this.keep(this.o.rollout.appendEvents([{ type: "context_compacted", tokens_before: tokensBefore, forced }]));
    this.o.emit({
      type: "context_compacted",
      tokens_before: tokensBefore,
      items_before: before,
      items_after: next.length,
      fallback,
      ...(summary ? { summary } : {}),
    });
  }
}

function displayOf(call: FunctionCallItem): string {
  try {
    const a = JSON.parse(call.arguments) as Record<string, unknown>;
    if (call.name === "exec_command" && typeof a.cmd === "string") return a.cmd;
    if (call.name === "write_stdin")
      return `session ${a.session_id}${a.chars ? ` <- ${JSON.stringify(a.chars)}` : " (poll)"}`;
    const target = a.file_path ?? a.dir_path ?? a.pattern;
    if (typeof target === "string") return target;
    if (typeof a.input === "string")
      return [...a.input.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1]).join(", ");
  } catch {
    // fall through
  }
  return call.arguments.slice(0, 80);
}
