/**
 * `npm run demo`: an offline session with the scripted model. A real executor child runs real
 * commands and writes real files in a fresh workspace; nothing needs a network or an API key.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const workspace = mkdtempSync(path.join(os.tmpdir(), "relay-demo-"));
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
const args = [
  "run",
  "--script", path.join(ROOT, "examples/demo-script.json"),
  "--approval", "never",
  "--sandbox", "workspace-write",
  "--cd", workspace,
  ...process.argv.slice(2),
  "Create a small Node.js hello-world script with a test, run them, and report.",
];
process.stderr.write(`demo workspace: ${workspace}\n(scripted model: the model's turns are replayed from examples/demo-script.json; the commands and files are real)\n\n`);
const r = spawnSync(relay[0]!, [...relay.slice(1), ...args], { stdio: "inherit", env: { ...process.env, RELAY_DETERMINISTIC_IDS: "1" } });
process.stderr.write(`\nfiles in ${workspace}: ${readdirSync(workspace).sort().join(", ")}\n`);
process.exit(r.status ?? 1);
