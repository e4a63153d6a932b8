import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { skipReasonOf } from "../../src/memories/eligibility.ts";
import { type Extractor, heuristicExtractor } from "../../src/memories/extract.ts";
import { hasUserTurn } from "../../src/memories/filter.ts";
import { type Phase1Options, runPhase1 } from "../../src/memories/phase1.ts";
import { SkipReportSchema } from "../../src/memories/skips.ts";
import { getOutput } from "../../src/memories/store/outputs.ts";
import type { ResponseItem } from "../../src/model/items.ts";
import { DEFAULT_SOURCES, KNOWN_SOURCES, parseSources } from "../../src/rollout/sources.ts";
import { CODEX, codexHomeCopy, fingerprint } from "./codex-home.ts";
import { HOUR, OFFLINE, ok, openDb, relay, sqliteSkip, tempHome } from "./support.ts";

function opts(o: Partial<Phase1Options> & Pick<Phase1Options, "state" | "relayHome">): Phase1Options {
  return {
    extractor: heuristicExtractor,
    workerId: "test",
    now: Date.now,
    maxAgeDays: 10,
    minIdleHours: 6,
    maxClaims: 16,
    maxRunningJobs: 16,
    concurrency: 4,
    ...o,
  };
}

describe("--sources", () => {
  test("a comma list, case and spaces ignored; all and default expand", () => {
    assert.deepEqual(ok(parseSources(" cli, EXEC ")), ["cli", "exec"]);
    assert.deepEqual(ok(parseSources("all")), [...KNOWN_SOURCES]);
    assert.deepEqual(ok(parseSources("default,exec")), [...DEFAULT_SOURCES, "exec"]);
  });

  test("an unknown or empty list is an error that names it and lists the known sources", () => {
    const bad = parseSources("cli,vscdoe");
    assert.ok("error" in bad);
    assert.match(bad.error.message, /unknown session source "vscdoe".*cli, vscode, exec, mcp, subagent, unknown/);
    const empty = parseSources(" , ");
    assert.ok("error" in empty);
    assert.match(empty.error.message, /at least one/);
  });

  test("the default set is the reference's interactive sources; Relay's consolidation runs are never read", () => {
    assert.deepEqual([...DEFAULT_SOURCES], ["cli", "vscode"]);
    const row = {
      id: "t",
      origin: "relay",
      rollout_path: "/x",
      source: "memory_consolidation",
      cwd: "/",
      git_branch: null,
      created_at_ms: 0,
      updated_at_ms: 0,
      memory_mode: "enabled",
      host: "h",
    };
    const rules = {
      nowMs: 10 * HOUR,
      maxAgeDays: 10,
      minIdleHours: 6,
      sources: ["memory_consolidation", ...KNOWN_SOURCES],
    };
    assert.equal(skipReasonOf(row, rules), "source_filtered");
    assert.equal(skipReasonOf({ ...row, source: "exec" }, rules), undefined);
  });

  test("a user turn is a user message with more than injected blocks", () => {
    const user = (text: string) =>
      ({ type: "message", role: "user", content: [{ type: "input_text", text }] }) as unknown as ResponseItem;
    assert.equal(hasUserTurn([user("<environment_context>\n<cwd>/w</cwd>\n</environment_context>")]), false);
    assert.equal(hasUserTurn([user("  ")]), false);
    assert.equal(
      hasUserTurn([user("<environment_context>x</environment_context>"), user("fix the <b>bold</b> bug")]),
      true,
    );
  });
});

describe("memories over a whole Codex home", { skip: sqliteSkip }, () => {
  test("default sources: each skipped session is counted under its reason; the rest is extracted", async () => {
    await using h = tempHome();
    await using c = codexHomeCopy();
    const db = await openDb(h.dbFile);
    try {
      const asked: string[] = [];
      const extractor: Extractor = (input, signal) => (asked.push(input.threadId), heuristicExtractor(input, signal));
      const rep = ok(await runPhase1(opts({ state: db, relayHome: h.home, codexHome: c.dir, extractor })));
      const s = SkipReportSchema.parse(rep.skipped);
      assert.equal(rep.scanned, 11);
      assert.deepEqual(s.sources, { exec: 1, subagent: 1, mcp: 1 });
      const nonzero = Object.fromEntries(Object.entries(s.by_reason).filter(([, n]) => n > 0));
      assert.deepEqual(nonzero, {
        source_filtered: 3,
        too_recent: 1,
        too_old: 1,
        parse_error: 1,
        unreadable: 1,
        no_user_turn: 1,
      });
      assert.equal(s.total, 8);
      assert.equal(s.parse_errors.length, 1);
      assert.equal(path.basename(s.parse_errors[0]!.file), `rollout-2025-09-24T09-50-00-${CODEX.tornMeta}.jsonl`);
      assert.equal(s.parse_errors[0]!.line, 2, "the blank first line is not the session_meta line");
      assert.equal(s.unreadable[0]!.file, c.unreadable);
      const by = Object.fromEntries(rep.outcomes.map((o) => [o.threadId, o.status]));
      assert.deepEqual(Object.keys(by).sort(), [CODEX.cli, CODEX.vscode, CODEX.noUserTurn, CODEX.corruptMiddle].sort());
      assert.equal(by[CODEX.noUserTurn], "no_user_turn");
      assert.ok(!asked.includes(CODEX.noUserTurn), "a session without a user turn never reaches the extractor");
      assert.equal(asked.length, 3);
    } finally {
      await db.close();
    }
  });

  test("a corrupt line in the middle is reported with file:line and the rest of the session is used", async () => {
    await using h = tempHome();
    await using c = codexHomeCopy();
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(await runPhase1(opts({ state: db, relayHome: h.home, codexHome: c.dir })));
      const o = rep.outcomes.find((x) => x.threadId === CODEX.corruptMiddle)!;
      assert.equal(o.status, "succeeded");
      assert.match(
        o.warnings?.join("\n") ?? "",
        new RegExp(`skipped line 3 of .*${CODEX.corruptMiddle}\\.jsonl: not valid JSON`),
      );
      assert.ok(rep.warnings.some((w) => w.includes("skipped line 3 of")));
      assert.match(
        ok(await getOutput(db, CODEX.corruptMiddle))!.rollout_summary,
        /pytest -q/,
        "the lines after the corrupt one are used",
      );
    } finally {
      await db.close();
    }
  });

  test("--sources all reads exec, mcp and sub-agent sessions too", async () => {
    await using h = tempHome();
    await using c = codexHomeCopy();
    const db = await openDb(h.dbFile);
    try {
      const rep = ok(
        await runPhase1(opts({ state: db, relayHome: h.home, codexHome: c.dir, sources: ok(parseSources("all")) })),
      );
      assert.equal(rep.skipped.by_reason.source_filtered, 0);
      const by = Object.fromEntries(rep.outcomes.map((o) => [o.threadId, o.status]));
      for (const id of [CODEX.exec, CODEX.mcp, CODEX.subagent])
        assert.ok(by[id] === "succeeded" || by[id] === "succeeded_no_output", `${id}: ${by[id]}`);
      assert.match(ok(await getOutput(db, CODEX.exec))!.rollout_summary, /pytest -q tests\/test_tally\.py/);
      const again = ok(await runPhase1(opts({ state: db, relayHome: h.home, codexHome: c.dir, sources: ["exec"] })));
      assert.equal(again.skipped.by_reason.up_to_date, 1, "an extracted session is counted as already extracted");
    } finally {
      await db.close();
    }
  });
});

describe("relay memories consolidate --codex-home", { skip: sqliteSkip }, () => {
  test("never modifies the Codex home: every file's bytes, mode and mtime are the same after two runs", async () => {
    await using h = tempHome();
    await using c = codexHomeCopy();
    const before = fingerprint(c.dir);
    assert.ok(Object.keys(before).length >= 12);
    const json = await relay(h.home, [
      "memories",
      "consolidate",
      ...OFFLINE,
      "--codex-home",
      c.dir,
      "--sources",
      "all",
      "--json",
    ]);
    assert.equal(json.code, 0, json.stderr);
    const human = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--codex-home", c.dir]);
    assert.equal(human.code, 0, human.stderr);
    assert.deepEqual(fingerprint(c.dir), before);
  });

  test("the report says how many sessions were skipped and why: one line for people, phase1.skipped in --json", async () => {
    await using h = tempHome();
    await using c = codexHomeCopy();
    const human = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--codex-home", c.dir, "--skip-phase2"]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^\d{4}-\d\d-\d\dT\S+Z relay memories: phase1 scanned=11 claimed=4 .* skipped=8 \(/);
    assert.match(human.stdout, /source filtered 3: exec 1, mcp 1, subagent 1\)/);
    assert.match(
      human.stdout,
      /too recent \(idle < min_rollout_idle_hours\) 1, too old \(> max_rollout_age_days\) 1, no user turn 1, parse error 1, unreadable 1/,
    );
    assert.match(human.stderr, new RegExp(`skipped .*${CODEX.tornMeta}\\.jsonl:2: `));
    assert.match(human.stderr, /skipped .*0000000d1e00\.jsonl: cannot read rollout/);
    const json = await relay(h.home, [
      "memories",
      "consolidate",
      ...OFFLINE,
      "--codex-home",
      c.dir,
      "--skip-phase2",
      "--json",
      "--sources",
      "cli,exec",
    ]);
    assert.equal(json.code, 0, json.stderr);
    const s = SkipReportSchema.parse(JSON.parse(json.stdout).phase1.skipped);
    assert.deepEqual(s.sources, { vscode: 1, subagent: 1, mcp: 1 });
    assert.equal(s.by_reason.up_to_date, 3, "the cli sessions of the first run are already extracted");
    assert.equal(s.by_reason.no_user_turn, 0, "recorded as extracted with no output by the first run");
    assert.equal(s.parse_errors[0]!.line, 2);
  });

  test("an unknown source in --sources or [memories] sources is a usage error that names it", async () => {
    await using h = tempHome();
    const flag = await relay(h.home, ["memories", "consolidate", ...OFFLINE, "--sources", "cli,ide"]);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /unknown session source "ide" in --sources: use a comma list of cli, vscode, exec/);
    writeFileSync(path.join(h.home, "config.toml"), '[memories]\nsources = ["cli", "ide"]\n');
    const conf = await relay(h.home, ["memories", "consolidate", ...OFFLINE]);
    assert.equal(conf.code, 2);
    assert.match(conf.stderr, /config\.toml: \[memories\]: [\s\S]*sources/);
  });
});
