/** Reading a rollout's lines in tests, without relay's reader (so its bugs cannot hide). */
import { readFileSync } from "node:fs";

/** The payload of every turn_context line of a rollout file, in order. */
export function turnContexts(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { type: string; payload: Record<string, unknown> })
    .filter((l) => l.type === "turn_context")
    .map((l) => l.payload);
}
