/**
 * What reading commands with the bash grammar costs `-a untrusted`: loading it once (in a fresh
 * process) and checking a command; and its parse against the hand-written parser's parse of the
 * same commands in the same run (a ratio, so it holds on a noisy machine).
 *   bun scripts/bench/approval.ts [--rounds 200]
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { builtinPolicy } from "../../src/policy/builtin-rules.ts";
import { commandSafety } from "../../src/policy/command-safety.ts";
import { loadBashGrammar } from "../../src/util/bash-grammar.ts";
import { parseShell } from "../../src/util/shell-parse.ts";
import { parseShellTree } from "../../src/util/shell-tree.ts";
import { goalLine, numberFlag, ROOT, summarize } from "./stats.ts";

const ROUNDS = numberFlag("--rounds", 200);

/** Every example of approval-policy.json: the commands a model writes, both ways. */
const corpus = builtinPolicy().rules.flatMap((r) => [...r.runs, ...r.asks]);

/** loadBashGrammar() in a new process: the first check of a session pays this once. */
function loadMs(): number {
  const script = `const t = performance.now(); await (await import(${JSON.stringify(path.join(ROOT, "src/util/bash-grammar.ts"))})).loadBashGrammar(); console.log(performance.now() - t);`;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
  return Number(r.stdout.trim());
}

/** Mean ms per command over `ROUNDS` passes of the corpus. */
function perCommand(check: (cmd: string) => unknown): number {
  for (const c of corpus) check(c);
  const passes: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    for (const c of corpus) check(c);
    passes.push((performance.now() - t) / corpus.length);
  }
  return summarize(passes).p50;
}

const quietly = (parse: (cmd: string) => unknown) => (cmd: string) => {
  try {
    return parse(cmd);
  } catch {
    return undefined;
  }
};

const loads = [loadMs(), loadMs(), loadMs()].sort((a, b) => a - b);
const parser = await loadBashGrammar();
const check = perCommand((c) => commandSafety(c));
const tree = perCommand(quietly((c) => parseShellTree(parser, c)));
const hand = perCommand(quietly(parseShell));
console.log(`# ${corpus.length} commands (approval-policy.json's examples), ${ROUNDS} passes`);
console.log(goalLine("approval_grammar_load_ms", loads[1]!, 250));
console.log(goalLine("approval_check_ms_per_command", check, 0.5, 4));
// The grammar's parse (wasm, a tree per command, the strict walk) against a small hand lexer:
// the price of reading bash as bash does, paid in microseconds.
console.log(goalLine("approval_grammar_vs_hand_parse_ratio", tree / hand, 15, 1));
