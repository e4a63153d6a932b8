/**
 * A sandboxed session's `sandbox/check` on a fresh executor, with and without the remembered
 * user-namespace probe (src/sandbox/linux/userns-memo.ts): fresh executors in pairs (A B A B …),
 * one with a TMPDIR of its own and no memo (it probes: TinyCC's first compile and a fork), one
 * with a TMPDIR whose memo an earlier executor wrote.
 *   bun scripts/bench/sandbox-check.ts [--binary dist/relay] [--runs 10]
 * Prints `sandbox_check.memo_ratio value goal OK|MISS` (with the memo over without; goal ≤ 0.6)
 * and a `#` line with both medians.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import { spawnPeer } from "../../src/protocol/child.ts";
import { goalLine, numberFlag, ROOT, summarize, textFlag } from "./stats.ts";

const RUNS = numberFlag("--runs", 10);
const BINARY = path.resolve(textFlag("--binary") ?? path.join(ROOT, "dist/relay"));
const work = mkdtempSync(path.join(os.tmpdir(), "relay-bench-check-"));
const ws = path.join(work, "ws");
mkdirSync(path.join(ws, ".git"), { recursive: true });

/** Milliseconds of one `sandbox/check` on a fresh executor whose TMPDIR is `tmp`. */
async function check(tmp: string): Promise<number> {
  const spawned = spawnPeer([BINARY, "executor"], { env: { ...process.env, TMPDIR: tmp }, name: "executor" });
  if ("error" in spawned) throw new Error(spawned.error.message);
  const { peer } = spawned.ok;
  if ("error" in (await peer.call(ExecutorMethods.info, { containment: "later" })))
    throw new Error("the executor did not answer");
  const started = performance.now();
  const r = await peer.call(ExecutorMethods.sandboxCheck, {
    sandbox: { mode: "workspace-write", writable_roots: [ws], network: false },
    cwd: ws,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  const ms = performance.now() - started;
  if ("error" in r) throw new Error(`sandbox/check: ${r.error.message}`);
  await spawned.ok.shutdown();
  return ms;
}

try {
  const remembered = mkdtempSync(path.join(work, "tmp-"));
  await check(remembered); // writes the memo (and the hashed source) there
  const without: number[] = [];
  const withMemo: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    without.push(await check(mkdtempSync(path.join(work, "tmp-"))));
    withMemo.push(await check(remembered));
  }
  const a = summarize(without).p50;
  const b = summarize(withMemo).p50;
  console.log(
    `# sandbox/check on a fresh executor, p50 of ${RUNS}: ${a.toFixed(1)} ms probing, ${b.toFixed(1)} ms with the memo`,
  );
  console.log(goalLine("sandbox_check.memo_ratio", b / a, 0.6));
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.exit(0);
