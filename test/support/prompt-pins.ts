/**
 * Pins on prompt texts: the first 16 hex digits of each text's sha256. A prompt changes only
 * when its pin changes with it, so moving a prompt (e.g. into a Markdown file) cannot change
 * what the model sees unnoticed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

export function pinOf(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
}

/** Each rendered text has its pin; the diff names the ones that changed and their new pins. */
export function assertPinned(rendered: Record<string, string>, pins: Record<string, string>): void {
  const actual = Object.fromEntries(Object.entries(rendered).map(([name, text]) => [name, pinOf(text)]));
  assert.deepEqual(
    actual,
    pins,
    "a prompt's text changed: if you meant to change it, put its new pin (shown in the diff) in the test",
  );
}

/** The test renders every prompt of a room's prompts.generated.ts: `rendered` names each one it renders. */
export function assertCovers(generated: Record<string, unknown>, rendered: string[]): void {
  assert.deepEqual(
    [...new Set(rendered)].sort(),
    Object.keys(generated).sort(),
    "render and pin every prompt of the room (a new prompts/*.md needs its pin)",
  );
}

/** A value for a placeholder that a careless fill would mangle: replacement patterns, braces, a newline. */
export const AWKWARD = "a $& b $1 $$ {{objective}} ${x}\nnext line";
