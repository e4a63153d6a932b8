/**
 * Unknown keys of config.toml's `[memories]`, for the config's warnings: the section's settings
 * are read on their own (memories.ts) and only where memories are used, so without this a
 * misspelt setting would be its default without a word. The key tree is the generated one, so
 * no schema is built.
 */
import { memorySettingsKeys } from "./memories-checks.generated.ts";
import { unknownKeysIn } from "./unknown-keys.ts";

/** `file: unknown key "memories.x" ignored (did you mean "memories.y"?)` for each key the section lacks. */
export function memoriesKeyWarnings(section: unknown, file: string): string[] {
  return unknownKeysIn(memorySettingsKeys, section, "memories.").map((w) => `${file}: ${w}`);
}
