/**
 * `[memories]` settings: defaults, values clamped into their ranges, refusals with the key, all
 * decided by the generated check (no zod schema built for a valid section). The file runs in a
 * global of its own under npm test, so the count of built schemas starts from its imports.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { defaultMemorySettings, parseMemorySettings } from "../../src/config/memories.ts";
import { lazySchemasBuilt } from "../../src/util/lazy-schema.ts";
import { schemasBuiltElsewhere } from "../support/skip.ts";

const builtAtStart = lazySchemasBuilt();

describe("[memories] settings", () => {
  test("defaults, and values outside a range taken as its nearest bound, read without building a schema", {
    skip: schemasBuiltElsewhere(builtAtStart),
  }, () => {
    const defaults = defaultMemorySettings();
    assert.equal(defaults.max_raw_memories_for_consolidation, 256);
    assert.equal(defaults.summary_max_tokens, 2500);
    assert.equal(defaults.extractor, "auto");
    const r = parseMemorySettings(
      {
        max_raw_memories_for_consolidation: 100_000,
        max_unused_days: -4,
        max_rollouts_per_run: 0,
        summary_max_tokens: 5,
        phase2_cooldown_seconds: 10_000_000,
        extract_concurrency: 3,
        extractor: "heuristic",
      },
      "config.toml",
    );
    assert.ok("ok" in r, JSON.stringify(r));
    assert.equal(r.ok.max_raw_memories_for_consolidation, 4096);
    assert.equal(r.ok.max_unused_days, 0);
    assert.equal(r.ok.max_rollouts_per_run, 1);
    assert.equal(r.ok.summary_max_tokens, 100);
    assert.equal(r.ok.phase2_cooldown_seconds, 7 * 86_400);
    assert.equal(r.ok.extract_concurrency, 3);
    assert.equal(r.ok.extractor, "heuristic");
    assert.equal(lazySchemasBuilt(), builtAtStart);
  });

  test("a value of the wrong kind is refused with its key and the file", () => {
    for (const [key, value] of [
      ["max_unused_days", 1.5],
      ["max_running_jobs", "8"],
      ["extractor", "llm"],
      ["sources", []],
    ] as const) {
      const r = parseMemorySettings({ [key]: value }, "/h/config.toml");
      assert.ok("error" in r, `${key} = ${JSON.stringify(value)} was accepted`);
      assert.match(r.error.message, new RegExp(`^/h/config\\.toml: \\[memories\\]: .*${key}`, "s"));
    }
  });
});
