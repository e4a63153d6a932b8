/**
 * relay infty over a long run: does a handoff cost the same at turn 1,000 as at turn 10? A
 * `relay infty run` process (the driver) against a fake model over SSE whose Solver adds one
 * ~2 KiB artifact a turn, asks for verification every 5th turn (a claim naming that artifact)
 * and for direction every 25th, and otherwise reports progress in prose (so the Director also
 * steps in for a silent Solver, as in a real run). Then a restore to a middle checkpoint.
 *   bun scripts/bench/infty-long.ts [--turns 1000]      (RELAY_BIN=dist/relay: the binary)
 * Prints the figures, then `name value goal OK|MISS` lines: the median time between Solver
 * turns near the end over that near the start, .checkpoints.git on disk over the rest of the
 * run store, the driver's median RSS over the last 50 turns over that over turns 50-100 (it swings
 * by a tenth between collections), and the restore's wall time.
 */
import { spawn, spawnSync } from "node:child_process";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type RecordedRequest, reply, startFakeModelServer } from "../../test/support/fake-model-server.ts";
import { fmtMs, goalLine, numberFlag, printTable, ROOT, summarize } from "./stats.ts";

const TURNS = numberFlag("--turns", 1000);
const WINDOW = Math.min(100, Math.floor(TURNS / 5));
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
const sig = (o: unknown) => reply().text(JSON.stringify(o));

/** The role a request is for, from its role prompt. */
function roleOf(r: RecordedRequest): "solver" | "director" | "verifier" {
  const text = r.rawBody;
  if (text.includes("# Role: Solver")) return "solver";
  if (text.includes("# Role: Director")) return "director";
  return "verifier";
}

/** Whether the request continues a turn (its last input item is a tool call's output). */
function midTurn(r: RecordedRequest): boolean {
  const input = (r.body.input ?? []) as Array<{ type?: string }>;
  return input.at(-1)?.type === "function_call_output";
}

const artifact = (k: number) => `${`artifact of turn ${k}: ${"x".repeat(60)}\n`.repeat(28)}`;
const addFiles = (files: Record<string, string>) => ({
  input: `*** Begin Patch\n${Object.entries(files)
    .map(
      ([p, text]) =>
        `*** Add File: ${p}\n${text
          .split("\n")
          .slice(0, -1)
          .map((l) => `+${l}`)
          .join("\n")}\n`,
    )
    .join("")}*** End Patch\n`,
});

/** The Solver's turn starts (ms) and the models' replies. */
function models() {
  const starts: number[] = [];
  const respond = (r: RecordedRequest) => {
    const role = roleOf(r);
    if (role === "director")
      return sig({ directive: "Keep going: one artifact a turn, a claim every fifth.", rationale: "the plan" });
    if (role === "verifier") return sig({ verdict: "pass", reasons: ["the artifact is there"], suggestions: [] });
    const k = starts.length;
    if (!midTurn(r)) {
      starts.push(performance.now());
      const claim =
        (k + 1) % 5 === 0
          ? {
              [`memory/claims/c-${k + 1}.json`]: `${JSON.stringify({ claim: `turn ${k + 1}'s artifact exists`, evidence: [`artifacts/a-${k + 1}.txt`] })}\n`,
            }
          : {};
      return reply().toolCall("apply_patch", addFiles({ [`artifacts/a-${k + 1}.txt`]: artifact(k + 1), ...claim }));
    }
    if (k % 25 === 0) return sig({ type: "direction_request", prompt: `turn ${k}: what next?` });
    if (k % 5 === 0) return sig({ type: "verification_request", claim_path: `memory/claims/c-${k}.json`, notes: null });
    return reply().text(`Turn ${k}: wrote artifacts/a-${k}.txt; going on.`);
  };
  return { starts, respond };
}

function rssOf(pid: number | undefined): number {
  if (!pid) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Bytes on disk under `dir` (blocks), and the number of files. */
function onDisk(dir: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) {
      const sub = onDisk(p);
      bytes += sub.bytes;
      files += sub.files;
    } else {
      bytes += st.blocks * 512;
      files++;
    }
  }
  return { bytes, files };
}

const median = (xs: number[]) => summarize(xs).p50;
const gaps = (starts: number[], from: number, to: number) =>
  starts.slice(from + 1, to).map((t, i) => t - starts[from + i]!);

const home = mkdtempSync(path.join(os.tmpdir(), "relay-bench-infty-long-"));
const server = await startFakeModelServer();
server.recording = false;
try {
  let pid: number | undefined;
  const m = models();
  server.responder = m.respond;
  const env = { ...process.env, RELAY_HOME: home };
  const args = [
    "infty",
    "run",
    "--no-repo",
    "--run-id",
    "long",
    "--base-url",
    server.baseUrl,
    "-m",
    "m",
    "-s",
    "danger-full-access",
    "--max-turns",
    String(TURNS),
    "--json",
    "a long run",
  ];
  const child = spawn(relay[0]!, [...relay.slice(1), ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  pid = child.pid;
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-4000)));
  /** The driver's RSS every 50 ms, with the Solver turn it was taken in. */
  const samples: Array<{ turn: number; rss: number }> = [];
  const sampler = setInterval(() => {
    const rss = rssOf(pid);
    if (rss > 0) samples.push({ turn: m.starts.length, rss });
  }, 50);
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  clearInterval(sampler);
  if (code !== 1 || m.starts.length < TURNS)
    throw new Error(
      `the run should end on its turn budget after ${TURNS} turns (exit 1); it exited ${code} after ${m.starts.length}: ${stderr}`,
    );
  const run = path.join(home, "infty", "long");
  const ckpt = onDisk(path.join(run, ".checkpoints.git"));
  const all = onDisk(run);
  const store = { bytes: all.bytes - ckpt.bytes, files: all.files - ckpt.files };
  const list = JSON.parse(
    spawnSync(relay[0]!, [...relay.slice(1), "infty", "checkpoints", "long", "--json"], { env, encoding: "utf8" })
      .stdout,
  ) as Array<{ id: string }>;
  const middle = list[Math.floor(list.length / 2)]!.id;
  const t = performance.now();
  const restored = spawnSync(relay[0]!, [...relay.slice(1), "infty", "restore", "long", middle], {
    env,
    encoding: "utf8",
  });
  const restoreMs = performance.now() - t;
  if (restored.status !== 0) throw new Error(`restore to ${middle} failed: ${restored.stderr}`);
  // The RSS swings by a tenth between collections, so stretches are compared, not single samples.
  const rssIn = (from: number, to: number) => samples.filter((x) => x.turn > from && x.turn <= to).map((x) => x.rss);
  const rssStart = median(rssIn(WINDOW / 2, WINDOW));
  const rssEnd = median(rssIn(TURNS - WINDOW / 2, TURNS));
  const peaks = Array.from({ length: Math.ceil(TURNS / WINDOW) }, (_, i) =>
    Math.max(...rssIn(i * WINDOW, (i + 1) * WINDOW)),
  );
  const first = median(gaps(m.starts, 0, WINDOW));
  const last = median(gaps(m.starts, TURNS - WINDOW, TURNS));
  printTable([
    ["what", "value"],
    [`time between Solver turns, turns 1-${WINDOW} (median)`, fmtMs(first)],
    [`time between Solver turns, turns ${TURNS - WINDOW}-${TURNS} (median)`, fmtMs(last)],
    ["run store without checkpoints", `${(store.bytes / 1048576).toFixed(1)} MiB, ${store.files} files`],
    [".checkpoints.git", `${(ckpt.bytes / 1048576).toFixed(1)} MiB, ${ckpt.files} files, ${list.length} checkpoints`],
    [
      `driver RSS, median over turns ${WINDOW / 2}-${WINDOW} / the last ${WINDOW / 2}`,
      `${(rssStart / 1048576).toFixed(0)} / ${(rssEnd / 1048576).toFixed(0)} MiB`,
    ],
    [`restore to ${middle} (a process)`, fmtMs(restoreMs)],
    [`driver RSS, highest in each ${WINDOW} turns`, peaks.map((b) => (b / 1048576).toFixed(0)).join(" ")],
  ]);
  console.log(goalLine("infty_long_turn_gap_end_vs_start_ratio", last / first, 1.5));
  console.log(goalLine("infty_long_checkpoints_vs_store_ratio", ckpt.bytes / store.bytes, 2));
  console.log(goalLine("infty_long_driver_rss_end_vs_start_ratio", rssEnd / rssStart, 1.2));
  console.log(goalLine("infty_long_restore_ms", restoreMs, 1500, 0));
} finally {
  await server.close();
  // RELAY_BENCH_KEEP=1 keeps the run for a look (its path is printed).
  if (process.env.RELAY_BENCH_KEEP) console.log(`kept ${home}`);
  else rmSync(home, { recursive: true, force: true });
}
