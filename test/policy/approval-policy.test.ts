/**
 * The approval policy as data: every built-in rule's examples (approval-policy.json) hold, and
 * a user's `[[approval_rules]]` in config.toml are checked when the config loads and then decide
 * the commands they match under untrusted.
 */
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { type UserApprovalRule, UserApprovalRuleSchema } from "../../src/config/approval-rules.ts";
import { loadConfig } from "../../src/config/config.ts";
import { configPath } from "../../src/home/home.ts";
import { evaluateExec } from "../../src/policy/approval.ts";
import { builtinPolicy } from "../../src/policy/builtin-rules.ts";
import { commandSafety } from "../../src/policy/command-safety.ts";
import { loadBashGrammar } from "../../src/util/bash-grammar.ts";
import { must, mustErr, withHome } from "../session/support.ts";

// command-safety.ts reads commands with the bash grammar, loaded once per process.
await loadBashGrammar();

describe("built-in approval policy (approval-policy.json)", () => {
  const policy = builtinPolicy();
  for (const [i, rule] of policy.rules.entries()) {
    test(`rule ${i} (${rule.programs.slice(0, 3).join(", ")}${rule.programs.length > 3 ? ", …" : ""}): its examples run or ask as they say`, () => {
      for (const example of rule.runs)
        assert.deepEqual(commandSafety(example), { safe: true }, `${example} should run without asking`);
      for (const example of rule.asks) {
        const v = commandSafety(example);
        assert.equal(v.safe, false, `${example} should ask`);
      }
    });
  }

  test("every program is named by one rule only, and every rule but the catch-all ones has a case that asks", () => {
    const seen = new Map<string, number>();
    for (const [i, rule] of policy.rules.entries()) {
      for (const p of rule.programs) {
        assert.ok(!seen.has(p), `${p} is in rules ${seen.get(p)} and ${i}`);
        seen.set(p, i);
      }
      if (rule.deny || rule.check || rule.max_positionals !== undefined)
        assert.ok(rule.asks.length > 0, `rule ${i} (${rule.programs[0]}) has no example that asks`);
    }
  });

  test("a denied option names its reason in the verdict", () => {
    assert.deepEqual(commandSafety("git log -p --ext-diff"), {
      safe: false,
      reason: "git log --ext-diff runs the external diff program the repository's configuration names (diff.external)",
    });
    assert.deepEqual(commandSafety("tee out"), { safe: false, reason: "tee writes its input to files" });
  });
});

describe("user approval rules ([[approval_rules]] in config.toml)", () => {
  const rules = (...r: unknown[]): UserApprovalRule[] => r.map((x) => UserApprovalRuleSchema.parse(x));

  test("allow: a matching command runs without asking under untrusted; others are judged as before", async () => {
    const mine = rules({ prefix: ["make", ["test", "check"]], decision: "allow" });
    assert.equal((await evaluateExec("untrusted", "make test", "/w", false, undefined, mine)).type, "skip");
    assert.equal((await evaluateExec("untrusted", "make check -j4 && ls", "/w", false, undefined, mine)).type, "skip");
    assert.equal((await evaluateExec("untrusted", "make install", "/w", false, undefined, mine)).type, "ask");
    assert.equal(
      (await evaluateExec("untrusted", "make test", "/w", false, undefined, [])).type,
      "ask",
      "without the rule it asks",
    );
  });

  test("allow covers the program, not what the shell does around it: a redirection to a file or an unmatched part still asks", () => {
    const mine = rules({ prefix: ["npm", "test"], decision: "allow" });
    assert.equal(commandSafety("npm test > out.txt", mine).safe, false);
    assert.equal(commandSafety("npm test; rm -rf x", mine).safe, false);
    assert.equal(commandSafety("npm test $(touch x)", mine).safe, false);
    assert.equal(commandSafety("timeout 60 npm test", mine).safe, true, "through a wrapper too");
    assert.equal(
      commandSafety("CI=1 npm test", mine).safe,
      false,
      "a variable that could change what it runs still asks",
    );
  });

  test("ask: a matching command asks even when the built-in policy would run it, with the rule's reason", () => {
    const mine = rules({ prefix: ["cat"], decision: "ask", reason: "cat may show secrets here" });
    assert.deepEqual(commandSafety("cat .env", mine), { safe: false, reason: "cat may show secrets here" });
    assert.deepEqual(commandSafety("ls | cat", rules({ prefix: ["cat"], decision: "ask" })), {
      safe: false,
      reason: "your approval rule for cat asks",
    });
    assert.equal(commandSafety("ls", mine).safe, true);
  });

  test("config.toml: rules load with their examples checked", async () => {
    await withHome(async (home) => {
      await mkdir(home, { recursive: true });
      await writeFile(
        configPath(home),
        '[[approval_rules]]\nprefix = ["cargo", ["test", "check"]]\ndecision = "allow"\nmatch = ["cargo test", "cargo check --all"]\nnot_match = ["cargo publish", "cargo"]\n',
      );
      const { config } = must(await loadConfig(home));
      assert.equal(config.approval_rules.length, 1);
      assert.equal(
        (await evaluateExec("untrusted", "cargo test -q", "/w", false, undefined, config.approval_rules)).type,
        "skip",
      );
    });
  });

  test("config.toml: an example the rule does not bear out is an error naming the rule, the example and why", async () => {
    await withHome(async (home) => {
      await mkdir(home, { recursive: true });
      await writeFile(
        configPath(home),
        '[[approval_rules]]\nprefix = ["npm", "test"]\ndecision = "allow"\nmatch = ["npm run test"]\nnot_match = ["npm test --watch", "ls | npm test"]\n',
      );
      const e = mustErr(await loadConfig(home));
      assert.match(e.message, /approval_rules\.0\.match\.0/);
      assert.match(e.message, /does not match "npm run test"/);
      assert.match(e.message, /approval_rules\.0\.not_match\.0/);
      assert.match(e.message, /matches "npm test --watch"/);
      assert.match(e.message, /approval_rules\.0\.not_match\.1/);
      assert.match(e.message, /one simple command/);
    });
  });

  test("config.toml: a bad decision or an empty prefix is refused", async () => {
    await withHome(async (home) => {
      await mkdir(home, { recursive: true });
      await writeFile(configPath(home), '[[approval_rules]]\nprefix = []\ndecision = "yes"\n');
      const e = mustErr(await loadConfig(home));
      assert.match(e.message, /approval_rules\.0\.prefix/);
      assert.match(e.message, /approval_rules\.0\.decision/);
    });
  });
});
