/**
 * `npm run demo:infty`: an offline infty run with scripted Solver, Director and Verifier. Real
 * executors run the commands and write the files; only the models' turns are replayed. The run
 * ends at the first failed tool call (--fail-on-tool-error), and the demo then checks the
 * deliverable itself: its files exist and its test passes when run again here.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
const objective =
  "Build a small word-count CLI (words by default, --lines for lines) with tests, verified, as a deliverable.";
process.stderr.write(
  "(scripted models: each role's turns are replayed from examples/infty-demo.json; the commands and files are real)\n\n",
);

/** Runs the run, showing its progress; stdout carries the deliverable's path. */
function runInfty(): Promise<{ status: number | null; stdout: string }> {
  const args = [
    "infty",
    "run",
    "--no-repo",
    "--script",
    path.join(ROOT, "examples/infty-demo.json"),
    "--verifiers",
    "1",
    "--fail-on-tool-error",
    ...process.argv.slice(2),
    objective,
  ];
  const child = spawn(relay[0]!, [...relay.slice(1), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => ((stdout += d.toString()), process.stdout.write(d)));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout })));
}

const { status, stdout } = await runInfty();
const deliverable = stdout.trim().split("\n").at(-1) ?? "";
const checks: Array<[string, () => string | undefined]> = [
  [
    "the run completed with every tool call succeeding",
    () => (status === 0 ? undefined : `relay exited ${status} (its last line above says why)`),
  ],
  [
    "the deliverable holds wc.mjs, wc.test.mjs and README.md",
    () => {
      const missing = ["wc.mjs", "wc.test.mjs", "README.md"].filter((f) => !existsSync(path.join(deliverable, f)));
      return deliverable && missing.length === 0
        ? undefined
        : `missing in ${deliverable || "(no deliverable path)"}: ${missing.join(", ")}`;
    },
  ],
  [
    "the deliverable's test passes when run again by the demo",
    () => {
      if (!existsSync(path.join(deliverable, "wc.test.mjs"))) return "no wc.test.mjs to run";
      const r = spawnSync("node", ["wc.test.mjs"], { cwd: deliverable, encoding: "utf8" });
      return r.status === 0
        ? undefined
        : `node wc.test.mjs: exit ${r.status}: ${`${r.stdout}${r.stderr}`.trim().split("\n").slice(0, 3).join(" | ")}`;
    },
  ],
];
const failures = checks.map(([what, check]) => [what, check()] as const).filter(([, why]) => why !== undefined);
process.stderr.write("\n");
for (const [what] of checks) process.stderr.write(`  ${failures.some(([w]) => w === what) ? "✗" : "✓"} ${what}\n`);
if (failures.length > 0) {
  const [what, why] = failures[0]!;
  process.stderr.write(`\ndemo:infty FAILED: ${what}: ${why}\n`);
  process.exit(1);
}
process.stderr.write(`\ndemo:infty passed: all ${checks.length} checks\n`);
