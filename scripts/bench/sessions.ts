/**
 * `relay sessions list` over many rollouts: N synthetic sessions of T turns each (about 40 KiB
 * a turn: commands, outputs, answers), then the listing in process (the newest 20, and all of
 * them) and as a relay process against `relay sessions list --help` as the start-up baseline.
 *   bun scripts/bench/sessions.ts [--rollouts 3000] [--turns 5]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { assistantMessage, userMessage } from "../../src/model/items.ts";
import { listSessions } from "../../src/rollout/summary.ts";
import { RolloutWriter } from "../../src/rollout/writer.ts";
import { fmtMs, numberFlag, printTable, ROOT } from "./stats.ts";

const N = numberFlag("--rollouts", 3000);
const TURNS = numberFlag("--turns", 5);
const output = `Process exited with code 0\nOutput:\n${"a line of test output\n".repeat(200)}`;

async function writeSession(home: string, i: number): Promise<void> {
  const w = await RolloutWriter.create({
    home,
    meta: { cwd: `/work/proj${i % 20}`, source: "cli" },
    now: new Date(Date.now() - i * 60_000),
  });
  if ("error" in w) throw new Error(w.error.message);
  for (let t = 0; t < TURNS; t++) {
    await w.ok.append([
      {
        type: "turn_context",
        payload: { cwd: "/work", approval_policy: "never", sandbox_policy: "read-only", model: "bench-model" },
      },
    ]);
    await w.ok.appendItems([userMessage(`task ${i}.${t}: fix module${i % 37}/file${i}.ts`)]);
    await w.ok.appendEvents([{ type: "user_message", message: `task ${i}.${t}` }]);
    for (let c = 0; c < 8; c++) {
      const call_id = `call_${t}_${c}`;
      await w.ok.appendItems([
        {
          type: "function_call",
          name: "exec_command",
          arguments: JSON.stringify({ cmd: `bun test test/m${c}.test.ts` }),
          call_id,
        },
        { type: "function_call_output", call_id, output },
      ]);
    }
    await w.ok.appendItems([assistantMessage(`Fixed module${i % 37}/file${i}.ts; tests pass.`)]);
  }
  await w.ok.close();
}

async function timed(f: () => Promise<unknown>, rounds = 3): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    await f();
    samples.push(performance.now() - t);
  }
  return Math.min(...samples);
}

function processMs(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return timed(async () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, "src/main.ts"), ...args], { env, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`relay ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  });
}

const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-sessions-"));
try {
  const t0 = performance.now();
  for (let i = 0; i < N; i += 50)
    await Promise.all(Array.from({ length: Math.min(50, N - i) }, (_, k) => writeSession(home, i + k)));
  process.stdout.write(`wrote ${N} rollouts of ${TURNS} turns in ${fmtMs(performance.now() - t0)}\n`);
  const env = { ...process.env, RELAY_HOME: home };
  const newest = await timed(() => listSessions(home, { limit: 20 }));
  const all = await timed(() => listSessions(home), 1);
  // The same subcommand's start-up without its work (a bare --version skips the command tree).
  const version = await processMs(["sessions", "list", "--help"], env);
  const list = await processMs(["sessions", "list"], env);
  const goal = 2 * version;
  printTable([
    ["name", "value", "goal", ""],
    ["listSessions newest 20", fmtMs(newest), "", ""],
    [`listSessions all ${N}`, fmtMs(all), "", ""],
    ["per rollout (all)", fmtMs(all / N), "", ""],
    ["relay sessions list --help (start-up)", fmtMs(version), "", ""],
    ["relay sessions list", fmtMs(list), `< ${fmtMs(goal)}`, list < goal ? "OK" : "MISS"],
  ]);
} finally {
  rmSync(home, { recursive: true, force: true });
}
