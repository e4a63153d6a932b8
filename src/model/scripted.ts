/**
 * The `scripted` provider: NOT a real model. It replays the turns of a JSON script file, one
 * turn per `stream()` call, for offline demos and tests.
 */

import { readFile } from "node:fs/promises";
import { z } from "zod";
import type { TokenUsage } from "../contracts/usage.ts";
import { sleep, throwIfAborted } from "../process/sleep.ts";
import { lazySchema } from "../util/lazy-schema.ts";
import { estimateTokens } from "../util/truncate.ts";
import { type ModelClient, ModelError, type ModelEvent, type ModelRequest } from "./client.ts";

export const ScriptToolCallSchema = lazySchema(() =>
  z.union([
    z.strictObject({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) }),
    z.strictObject({ name: z.string().min(1), input: z.string() }),
  ]),
);

export const ScriptUsageSchema = lazySchema(() =>
  z.strictObject({
    input_tokens: z.number().int().min(0),
    output_tokens: z.number().int().min(0),
    total_tokens: z.number().int().min(0).optional(),
    cached_input_tokens: z.number().int().min(0).optional(),
  }),
);

export const ScriptTurnSchema = lazySchema(() =>
  z.strictObject({
    text: z.string().optional(),
    /** Optional reasoning summary, streamed before the text. */
    reasoning: z.string().optional(),
    tool_calls: z.array(ScriptToolCallSchema).optional(),
    usage: ScriptUsageSchema.optional(),
  }),
);

export const ScriptSchema = lazySchema(() => z.strictObject({ turns: z.array(ScriptTurnSchema) }));
export type Script = z.infer<typeof ScriptSchema>;
export type ScriptTurn = z.infer<typeof ScriptTurnSchema>;

export interface ScriptedClientOptions {
  /** Read lazily at the first `stream()` call. */
  scriptPath?: string;
  /** An in-memory script instead of a file. */
  script?: Script;
  /** Pause between streamed deltas, to make demos look alive. Default 0. */
  deltaDelayMs?: number;
  /**
   * Turns a resumed session already used, so that it goes on where it stopped instead of
   * replaying the script from the top. A function is called at the first request.
   */
  startAt?: number | (() => number);
}

export interface ScriptedModelClient extends ModelClient {
  readonly provider: "scripted";
  /** Turns consumed so far. */
  readonly turnsUsed: number;
}

/** Reads and validates a script file; the error names the file and every zod issue. */
export async function loadScript(path: string): Promise<Script> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new ModelError("script", `Cannot read the model script ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ModelError("script", `The model script ${path} is not valid JSON: ${(e as Error).message}`);
  }
  return parseScript(json, path);
}

export function parseScript(json: unknown, source = "the model script"): Script {
  const parsed = ScriptSchema.safeParse(json);
  if (!parsed.success)
    throw new ModelError("script", `Invalid model script ${source}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Splits text into a few deltas (at most 4), at word boundaries where possible. */
export function scriptDeltas(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  if (words.length <= 1) return text === "" ? [] : [text];
  const per = Math.ceil(words.length / Math.min(4, words.length));
  const out: string[] = [];
  for (let i = 0; i < words.length; i += per) out.push(words.slice(i, i + per).join(""));
  return out;
}

/** Rough usage when a turn gives none: a token per 4 bytes, as everywhere in relay. */
export function estimateUsage(request: ModelRequest, turn: ScriptTurn): TokenUsage {
  const input = estimateTokens(request.instructions + JSON.stringify(request.input) + JSON.stringify(request.tools));
  const output = estimateTokens((turn.reasoning ?? "") + (turn.text ?? "") + JSON.stringify(turn.tool_calls ?? []));
  return { input_tokens: input, output_tokens: output, total_tokens: input + output };
}

/** A script argument that stands for the session ID of the newest running process the model was told of. */
export const LAST_SESSION_ID = "$last_session_id";

/**
 * The newest "session ID N" in the tool outputs the request carries: process ids are random
 * (outside tests), so a script cannot write one down.
 */
function lastSessionId(request: ModelRequest): number | undefined {
  for (let i = request.input.length - 1; i >= 0; i--) {
    const item = request.input[i]!;
    if (item.type !== "function_call_output" && item.type !== "custom_tool_call_output") continue;
    const output = (item as { output: unknown }).output;
    const m = /session ID (\d+)/.exec(typeof output === "string" ? output : JSON.stringify(output));
    if (m) return Number(m[1]);
  }
  return undefined;
}

function resolveArguments(args: Record<string, unknown>, request: ModelRequest): Record<string, unknown> {
  if (!Object.values(args).includes(LAST_SESSION_ID)) return args;
  const id = lastSessionId(request);
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, v === LAST_SESSION_ID ? (id ?? v) : v]));
}

export function createScriptedClient(opts: ScriptedClientOptions): ScriptedModelClient {
  if (!opts.script && !opts.scriptPath)
    throw new ModelError("script", "The scripted model needs a script: set scriptPath to a JSON script file.");
  let script: Promise<Script> | undefined = opts.script ? Promise.resolve(parseScript(opts.script)) : undefined;
  let next: number | undefined;
  const source = opts.scriptPath ?? "the in-memory script";
  const delay = opts.deltaDelayMs ?? 0;

  async function* run(request: ModelRequest, signal?: AbortSignal): AsyncGenerator<ModelEvent> {
    throwIfAborted(signal);
    script ??= loadScript(opts.scriptPath!);
    const { turns } = await script;
    next ??= typeof opts.startAt === "function" ? opts.startAt() : (opts.startAt ?? 0);
    const n = next++;
    const turn = turns[n];
    if (!turn) {
      throw new ModelError(
        "script",
        `The scripted model has no turn left (turn ${n + 1} of ${turns.length}) in ${source}. This is a scripted, not a real, model: add turns to the script or give it a shorter task.`,
      );
    }
    const pause = async () => {
      if (delay > 0) await sleep(delay, signal);
      throwIfAborted(signal);
    };
    yield* turnEvents(turn, n, request, pause);
    throwIfAborted(signal);
    yield { type: "completed", responseId: `resp_scripted_${n + 1}`, usage: turnUsage(turn, request) };
  }

  return {
    provider: "scripted",
    get turnsUsed() {
      return next ?? 0;
    },
    stream: run,
  };
}

/** A script turn's deltas and items, in the order a real model streams them; `pause` before each. */
async function* turnEvents(
  turn: ScriptTurn,
  n: number,
  request: ModelRequest,
  pause: () => Promise<void>,
): AsyncGenerator<ModelEvent> {
  if (turn.reasoning) {
    for (const delta of scriptDeltas(turn.reasoning)) {
      await pause();
      yield { type: "reasoning_delta", delta };
    }
    yield {
      type: "item",
      item: {
        type: "reasoning",
        id: `rs_scripted_${n + 1}`,
        summary: [{ type: "summary_text", text: turn.reasoning }],
      },
    };
  }
  if (turn.text) {
    for (const delta of scriptDeltas(turn.text)) {
      await pause();
      yield { type: "text_delta", delta };
    }
    yield {
      type: "item",
      item: {
        type: "message",
        id: `msg_scripted_${n + 1}`,
        role: "assistant",
        content: [{ type: "output_text", text: turn.text }],
      },
    };
  }
  for (const [i, call] of (turn.tool_calls ?? []).entries()) {
    await pause();
    const callId = `call_scripted_${n + 1}_${i + 1}`;
    if ("input" in call)
      yield { type: "item", item: { type: "custom_tool_call", name: call.name, input: call.input, call_id: callId } };
    else
      yield {
        type: "item",
        item: {
          type: "function_call",
          name: call.name,
          arguments: JSON.stringify(resolveArguments(call.arguments, request)),
          call_id: callId,
        },
      };
  }
}

function turnUsage(turn: ScriptTurn, request: ModelRequest): TokenUsage {
  return turn.usage
    ? { ...turn.usage, total_tokens: turn.usage.total_tokens ?? turn.usage.input_tokens + turn.usage.output_tokens }
    : estimateUsage(request, turn);
}
