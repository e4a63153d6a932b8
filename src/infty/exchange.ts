/**
 * What became of a message the orchestrator handed to a role before a crash, read from the
 * role's rollout after the offset recorded with it (see InflightSchema in run-format.ts).
 */

import { Buffer } from "node:buffer";
import { open, stat } from "node:fs/promises";
import { z } from "zod";
import { lazySchema } from "../util/lazy-schema.ts";

export type Delivery =
  /** Not in the rollout: send it. */
  | { state: "unsent" }
  /** Recorded, but its turn did not finish: continue the turn without a new message. */
  | { state: "in_progress" }
  /** The turn finished: this is its final message. */
  | { state: "answered"; reply: string };

const Text = lazySchema(() => z.object({ text: z.string().optional() }).passthrough());
const ItemLine = lazySchema(() =>
  z.object({
    type: z.literal("response_item"),
    payload: z
      .object({ type: z.string(), role: z.string().optional(), content: z.array(Text).optional() })
      .passthrough(),
  }),
);
const EventLine = lazySchema(() =>
  z.object({
    type: z.literal("event_msg"),
    payload: z.object({ type: z.string(), last_agent_message: z.string().nullable().optional() }).passthrough(),
  }),
);

type Entry = { kind: "user" | "assistant"; text: string } | { kind: "call" } | { kind: "task_complete"; reply: string };

function entryOf(line: string): Entry | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined; // a line torn by the crash
  }
  const item = ItemLine.safeParse(v);
  if (item.success) {
    const p = item.data.payload;
    if (p.type === "function_call" || p.type === "custom_tool_call") return { kind: "call" };
    if (p.type === "message" && (p.role === "user" || p.role === "assistant"))
      return { kind: p.role, text: (p.content ?? []).map((c) => c.text ?? "").join("") };
    return undefined;
  }
  const ev = EventLine.safeParse(v);
  if (!ev.success) return undefined;
  if (ev.data.payload.type === "task_complete")
    return { kind: "task_complete", reply: ev.data.payload.last_agent_message ?? "" };
  return undefined;
}

/** Current size of a rollout file: the offset to record when sending a message. */
export async function rolloutOffset(file: string): Promise<number> {
  return (await stat(file).catch(() => ({ size: 0 }))).size;
}

async function readFrom(file: string, offset: number): Promise<string> {
  const fh = await open(file, "r").catch(() => undefined);
  if (!fh) return "";
  try {
    const { size } = await fh.stat();
    const buf = Buffer.alloc(Math.max(0, size - offset));
    await fh.read(buf, 0, buf.length, Math.min(offset, size));
    return buf.toString("utf8");
  } finally {
    await fh.close();
  }
}

/**
 * The turn answered `message` if it logged task_complete, or if the last thing it recorded is a
 * text with no tool call after it: a crash between that and task_complete lost nothing of the
 * answer. (A response cut off after its text and before its tool call looks the same; the role
 * is then asked to go on, as after any answer without a usable signal.)
 */
export async function deliveryOf(rolloutPath: string, offset: number, message: string): Promise<Delivery> {
  const entries = (await readFrom(rolloutPath, offset))
    .split("\n")
    .map(entryOf)
    .filter((e) => e !== undefined);
  // Only this role's own messages come after the offset; the last one is what counts.
  const at = entries.findLastIndex((e) => e.kind === "user");
  const user = entries[at];
  if (user?.kind !== "user" || user.text !== message) return { state: "unsent" };
  const turn = entries.slice(at + 1);
  const done = turn.find((e) => e.kind === "task_complete");
  if (done?.kind === "task_complete") return { state: "answered", reply: done.reply };
  const last = turn.filter((e) => e.kind === "assistant" || e.kind === "call").at(-1);
  return last?.kind === "assistant" ? { state: "answered", reply: last.text } : { state: "in_progress" };
}
