/**
 * `npm run demo`: an offline session with the scripted model. A real executor child runs real
 * commands and writes real files in a fresh workspace; nothing needs a network or an API key.
 * The demo does not take the session's word for it: afterwards it checks the files, runs their
 * test itself and looks for the terminal exchange, and its exit status is that verdict.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const workspace = mkdtempSync(path.join(os.tmpdir(), "relay-demo-"));
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
const args = [
  "run",
  "--script",
  path.join(ROOT, "examples/demo-script.json"),
  "--approval",
  "never",
  "--sandbox",
  "workspace-write",
  "--fail-on-tool-error",
  "--cd",
  workspace,
  ...process.argv.slice(2),
  "Create a small Node.js hello-world script with a test, run them, and report.",
];
process.stderr.write(
  `demo workspace: ${workspace}\n(scripted model: the model's turns are replayed from examples/demo-script.json; the commands and files are real)\n\n`,
);

/** Runs the session, showing its output as it comes and keeping a copy to check. */
function runSession(): Promise<{ status: number | null; transcript: string }> {
  const child = spawn(relay[0]!, [...relay.slice(1), ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let transcript = "";
  child.stdout.on("data", (d: Buffer) => ((transcript += d.toString()), process.stdout.write(d)));
  child.stderr.on("data", (d: Buffer) => ((transcript += d.toString()), process.stderr.write(d)));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, transcript })));
}

function node(...argv: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.platform === "win32" ? "node.exe" : "node", argv, { cwd: workspace, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

const { status, transcript } = await runSession();
const file = (name: string) =>
  existsSync(path.join(workspace, name)) ? readFileSync(path.join(workspace, name), "utf8") : undefined;
const checks: Array<[string, () => string | undefined]> = [
  [
    "the session ended well, every tool call succeeding",
    () => (status === 0 ? undefined : `relay exited ${status} (see its last line above)`),
  ],
  [
    "hello.js, hello.test.mjs and package.json were written",
    () => {
      const missing = ["hello.js", "hello.test.mjs", "package.json"].filter((f) => file(f) === undefined);
      return missing.length ? `missing: ${missing.join(", ")}` : undefined;
    },
  ],
  [
    "the test passes when run again by the demo",
    () => {
      const r = node("hello.test.mjs");
      return r.status === 0 && r.out === "test passed"
        ? undefined
        : `node hello.test.mjs: exit ${r.status}: ${r.out.split("\n").slice(0, 3).join(" | ")}`;
    },
  ],
  [
    "the patch changed the greeting",
    () => {
      const r = node("hello.js");
      return r.out === "Hello, world! (from relay)" ? undefined : `node hello.js printed ${JSON.stringify(r.out)}`;
    },
  ],
  [
    "the terminal prompt was answered through write_stdin",
    () => (/Hi, Relay/.test(transcript) ? undefined : 'no "Hi, Relay" in the session\'s output'),
  ],
];

process.stderr.write(`\nfiles in ${workspace}: ${readdirSync(workspace).sort().join(", ")}\n`);
const failures = checks.map(([what, check]) => [what, check()] as const).filter(([, why]) => why !== undefined);
for (const [what] of checks) process.stderr.write(`  ${failures.some(([w]) => w === what) ? "✗" : "✓"} ${what}\n`);
if (failures.length > 0) {
  const [what, why] = failures[0]!;
  process.stderr.write(`\ndemo FAILED: ${what}: ${why}\n`);
  process.exit(1);
}
process.stderr.write(`\ndemo passed: all ${checks.length} checks\n`);
