/**
 * `npm run demo:infty`: an offline infty run with scripted Solver, Director and Verifier. Real
 * executors run the commands and write the files; only the models' turns are replayed.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
process.stderr.write("(scripted models: each role's turns are replayed from examples/infty-demo.json; the commands and files are real)\n\n");
const r = spawnSync(
  relay[0]!,
  [...relay.slice(1), "infty", "run", "--script", path.join(ROOT, "examples/infty-demo.json"), "--verifiers", "1", ...process.argv.slice(2), "Build a small word-count CLI (words by default, --lines for lines) with tests, verified, as a deliverable."],
  { stdio: "inherit", env: { ...process.env, RELAY_DETERMINISTIC_IDS: "1" } },
);
process.exit(r.status ?? 1);
