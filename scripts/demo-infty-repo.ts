/**
 * `npm run demo:infty-repo`: an offline infty run on a git repository. The demo makes a small
 * repository whose test fails (wc.mjs splits on single spaces), then runs `relay infty run -C
 * <repo>` with scripted Solver and Verifier turns (examples/infty-repo-demo.json); the commands,
 * the sandbox, the checkouts and the commits are real. It then checks, itself: the run's branch
 * holds a commit whose own checkout passes the test, the repository's own checkout was not
 * touched, `relay infty diff` shows the fix, and `relay infty apply` merges it.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const relay = process.env.RELAY_BIN ? [process.env.RELAY_BIN] : [process.execPath, path.join(ROOT, "src/main.ts")];
const objective =
  "Make node wc.test.mjs pass: wc.mjs must count words separated by any whitespace, and 0 for empty input.";
const runId = `demo-repo-${Date.now().toString(36)}`;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=Demo User", "-c", "user.email=demo@example.com", "-C", cwd, ...args], {
    encoding: "utf8",
  }).trim();
const passes = (cwd: string) => {
  try {
    execFileSync("node", ["wc.test.mjs"], { cwd, stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

/** The user's repository: one commit, a failing test. */
function makeRepo(): string {
  const repo = mkdtempSync(path.join(os.tmpdir(), "relay-demo-repo-"));
  writeFileSync(path.join(repo, "wc.mjs"), 'export function count(text) {\n  return text.split(" ").length;\n}\n');
  writeFileSync(
    path.join(repo, "wc.test.mjs"),
    'import assert from "node:assert/strict";\nimport { count } from "./wc.mjs";\n\nassert.equal(count("a b  c\\n"), 3);\nassert.equal(count(""), 0);\nconsole.log("wc tests passed");\n',
  );
  git(repo, "init", "-q", "-b", "main");
  git(repo, "add", "-A");
  git(repo, "commit", "-qm", "wc: count words");
  return repo;
}

function relayRun(args: string[]): Promise<{ status: number | null; stdout: string }> {
  const child = spawn(relay[0]!, [...relay.slice(1), ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => ((stdout += d.toString()), process.stdout.write(d)));
  return new Promise((resolve) => child.once("close", (status) => resolve({ status, stdout })));
}

const repo = makeRepo();
const head = git(repo, "rev-parse", "HEAD");
process.stderr.write(
  `(a repository with a failing test in ${repo}; scripted models: each role's turns are replayed from examples/infty-repo-demo.json; the commands, sandbox, checkouts and commits are real)\n\n`,
);
const run = await relayRun([
  "infty",
  "run",
  "-C",
  repo,
  "--run-id",
  runId,
  "--script",
  path.join(ROOT, "examples/infty-repo-demo.json"),
  "--verifiers",
  "1",
  "--fail-on-tool-error",
  ...process.argv.slice(2),
  objective,
]);
const branch = `relay/${runId}`;

const checks: Array<[string, () => string | undefined | Promise<string | undefined>]> = [
  [
    "the run completed with every tool call succeeding",
    () => (run.status === 0 ? undefined : `relay exited ${run.status} (its last line above says why)`),
  ],
  [
    `${branch} holds a commit by relay infty whose own checkout passes the test`,
    () => {
      const fresh = mkdtempSync(path.join(os.tmpdir(), "relay-demo-fresh-"));
      try {
        const author = git(repo, "log", "-1", "--format=%an", branch);
        execFileSync("sh", ["-c", `git -C "${repo}" archive ${branch} | tar -x -C "${fresh}"`]);
        if (author !== "relay infty") return `the branch's head is by ${author}`;
        return passes(fresh) ? undefined : "node wc.test.mjs fails in a fresh checkout of the branch";
      } catch (e) {
        return (e as Error).message.split("\n")[0];
      } finally {
        rmSync(fresh, { recursive: true, force: true });
      }
    },
  ],
  [
    "the repository's own checkout was not touched (same HEAD, clean, the test still fails there)",
    () => {
      if (git(repo, "rev-parse", "HEAD") !== head) return "HEAD moved";
      if (git(repo, "status", "--porcelain")) return `git status: ${git(repo, "status", "--porcelain")}`;
      return passes(repo) ? "the test passes in the user's checkout before any apply" : undefined;
    },
  ],
  [
    "relay infty diff shows the fix",
    async () => {
      const diff = await relayRun(["infty", "diff", runId]);
      return /^\+ {2}return text\.split\(\/\\s\+\/\)/m.test(diff.stdout) ? undefined : "no such line in the diff";
    },
  ],
  [
    "relay infty apply merges it into main, and the test passes there",
    async () => {
      const applied = await relayRun(["infty", "apply", runId]);
      if (applied.status !== 0) return `relay infty apply exited ${applied.status}`;
      return passes(repo) && git(repo, "rev-parse", "HEAD") === git(repo, "rev-parse", branch)
        ? undefined
        : "main is not at the run's commit, or its test fails";
    },
  ],
];
const failures: Array<[string, string]> = [];
for (const [what, check] of checks) {
  const why = await check();
  if (why !== undefined) failures.push([what, why]);
}
process.stderr.write("\n");
for (const [what] of checks) process.stderr.write(`  ${failures.some(([w]) => w === what) ? "✗" : "✓"} ${what}\n`);
if (failures.length > 0) {
  const [what, why] = failures[0]!;
  process.stderr.write(`\ndemo:infty-repo FAILED: ${what}: ${why}\n(the repository is kept in ${repo})\n`);
  process.exit(1);
}
process.stderr.write(
  `\ndemo:infty-repo passed: all ${checks.length} checks (the repository is ${repo}; the run is ${runId} in relay infty list)\n`,
);
