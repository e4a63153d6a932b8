/**
 * relay's log, seen from outside: real relay processes write $RELAY_HOME/logs/relay.log in a
 * fresh home; --verbose and RELAY_LOG mirror it to stderr and reach the executor child; the file
 * rotates at RELAY_LOG_MAX_BYTES, also with several processes writing at once; a home where it
 * cannot be written changes nothing; an error nothing handled names the file with its stack.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { logFile, logLines } from "../support/log-file.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { runRelayAsync } from "../support/self.ts";

const base = mkdtempSync(path.join(os.tmpdir(), "relay-logs-test-"));
let n = 0;

/** A fresh, empty RELAY_HOME and an environment without anything log-related from ours. */
function freshHome(extra: Record<string, string> = {}): { home: string; env: NodeJS.ProcessEnv } {
  const home = path.join(base, `h${++n}`);
  mkdirSync(home);
  const env: NodeJS.ProcessEnv = { ...process.env, RELAY_HOME: home, ...extra };
  for (const k of ["RELAY_LOG", "RELAY_LOG_MAX_BYTES"]) if (!(k in extra)) delete env[k];
  return { home, env };
}

const HUMAN = /^relay\[(\d+)\] \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR) [\w-]+: /;

describe("relay's log", () => {
  after(() => rmSync(base, { recursive: true, force: true }));

  test("a command in a fresh home writes JSON lines to $RELAY_HOME/logs (dir 0700, file 0600), nothing extra on stderr", async () => {
    const { home, env } = freshHome();
    const r = await runRelayAsync(["memories", "status"], env);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.equal(statSync(path.join(home, "logs")).mode & 0o777, 0o700);
    assert.equal(statSync(logFile(home)).mode & 0o777, 0o600);
    const [first, ...rest] = logLines(logFile(home));
    assert.ok(first, "a line");
    assert.deepEqual(
      [first.level, first.service, first.msg, first.fields?.command],
      ["info", "cli", "start", "memories status"],
    );
    assert.ok(Number.isInteger(first.pid) && !Number.isNaN(Date.parse(first.time)));
    assert.ok(
      [first, ...rest].every((l) => l.level !== "debug"),
      "info is the default level",
    );
  });

  test("--verbose, before or after the subcommand, mirrors the lines to stderr in human form and logs debug too", async () => {
    for (const args of [
      ["--verbose", "memories", "status"],
      ["memories", "status", "--verbose"],
    ]) {
      const { home, env } = freshHome();
      const r = await runRelayAsync(args, env);
      assert.equal(r.status, 0, r.stderr);
      const mirrored = r.stderr.split("\n").filter(Boolean);
      assert.ok(mirrored.length >= 2 && mirrored.every((l) => HUMAN.test(l)), r.stderr);
      assert.match(r.stderr, /INFO cli: start command="memories status" /);
      assert.match(r.stderr, /DEBUG cli: exit command="memories status" code=0 /);
      assert.ok(
        logLines(logFile(home)).some((l) => l.level === "debug" && l.msg === "exit"),
        "debug lines reach the file",
      );
    }
  });

  test("RELAY_LOG=debug is inherited by the executor child: its lines, with its own pid, in the same file and on our stderr", async () => {
    const { home, env } = freshHome({ RELAY_LOG: "debug" });
    const r = await runRelayAsync(["executor", "--check", "--json"], env);
    JSON.parse(r.stdout); // the report is on stdout, untouched by the log
    const all = logLines(logFile(home));
    const parent = all.find((l) => l.msg === "start" && l.fields?.command === "executor")!;
    const spawned = all.find((l) => l.service === "child" && l.msg === "spawned" && l.pid === parent.pid);
    assert.ok(spawned, "the parent logs the spawn");
    const childPid = spawned.fields?.pid as number;
    assert.notEqual(childPid, parent.pid);
    const fromChild = all.filter((l) => l.pid === childPid);
    assert.ok(
      fromChild.some((l) => l.msg === "start" && l.fields?.command === "executor"),
      "the child logs its start",
    );
    assert.ok(
      fromChild.some((l) => l.level === "debug"),
      "at the inherited level",
    );
    assert.ok(
      all.some((l) => l.pid === parent.pid && l.msg === "exited" && l.fields?.pid === childPid),
      "and the parent its exit",
    );
    const childOnStderr = r.stderr.split("\n").filter((l) => HUMAN.exec(l)?.[1] === String(childPid));
    assert.ok(childOnStderr.length > 0, `the child's lines come through our stderr:\n${r.stderr}`);
  });

  test("relay.log rotates to relay.log.1 past RELAY_LOG_MAX_BYTES", async () => {
    const { home, env } = freshHome({ RELAY_LOG_MAX_BYTES: "300" });
    for (let i = 0; i < 3; i++) assert.equal((await runRelayAsync(["memories", "status"], env)).status, 0);
    const files = readdirSync(path.join(home, "logs")).sort();
    assert.ok(files.includes("relay.log.1"), `rotated: ${files.join(", ")}`);
    assert.ok(
      files.every((f) => /^relay\.log(\.[1-3])?$/.test(f)),
      `only relay.log and at most 3 rotated files: ${files.join(", ")}`,
    );
    for (const f of files) logLines(path.join(home, "logs", f));
    const starts = files.flatMap((f) => logLines(path.join(home, "logs", f))).filter((l) => l.msg === "start");
    assert.equal(starts.length, 3, "no line lost");
  });

  test("four processes writing at once: every line whole and kept once, one rotation at a time, no lock left", async () => {
    const { home } = freshHome();
    const dir = path.join(home, "logs");
    const writers = 4;
    const perWriter = 5000;
    const pad = "x".repeat(100);
    // About 2.6 files of lines in all: several rotations, and nothing old enough to be dropped.
    const lineBytes =
      JSON.stringify({
        time: new Date().toISOString(),
        level: "info",
        pid: 1234567,
        service: "writer",
        msg: "line",
        fields: { writer: 0, seq: 1000, pad },
      }).length + 1;
    const maxBytes = Math.floor((writers * perWriter * lineBytes) / 2.6);
    const script = path.join(base, "writer.ts");
    writeFileSync(
      script,
      `import { Log } from ${JSON.stringify(path.join(REPO_ROOT, "src/util/log.ts"))};
Log.configure({ dir: ${JSON.stringify(dir)}, level: "info", stderr: false, maxBytes: ${maxBytes} });
const log = Log.create("writer");
const w = Number(process.argv[2]);
process.stdout.write("ready\\n");
process.stdin.once("data", () => {
  for (let i = 0; i < ${perWriter}; i++) log.info("line", { writer: w, seq: i, pad: ${JSON.stringify(pad)} });
  process.exit(0);
});
`,
    );
    const children = Array.from({ length: writers }, (_, w) =>
      spawn(process.execPath, [script, String(w)], { stdio: ["pipe", "pipe", "inherit"] }),
    );
    // Start them together: each says it is ready, then all are told to go at once.
    await Promise.all(children.map((c) => new Promise((resolve) => c.stdout.once("data", resolve))));
    const exits = children.map((c) => new Promise<number | null>((resolve) => c.once("exit", resolve)));
    for (const c of children) c.stdin.write("go\n");
    assert.deepEqual(await Promise.all(exits), [0, 0, 0, 0]);

    const files = readdirSync(dir).sort();
    assert.ok(files.includes("relay.log.1"), `rotated: ${files.join(", ")}`);
    assert.ok(
      files.every((f) => /^relay\.log(\.[1-3])?$/.test(f)),
      `no lock or stray file left: ${files.join(", ")}`,
    );
    const seen = new Map<string, number>();
    for (const f of files)
      for (const l of logLines(path.join(dir, f))) {
        const key = `${l.fields?.writer}:${l.fields?.seq}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    assert.equal(seen.size, writers * perWriter, "every line is in one of the files");
    assert.ok(
      [...seen.values()].every((c) => c === 1),
      "none twice",
    );
  });

  test("a logs directory that cannot be written changes nothing, and --verbose says so once", async () => {
    const { home, env } = freshHome();
    writeFileSync(path.join(home, "logs"), "not a directory\n");
    const quiet = await runRelayAsync(["memories", "status"], env);
    assert.equal(quiet.status, 0, quiet.stderr);
    assert.equal(quiet.stderr, "");
    const verbose = await runRelayAsync(["--verbose", "memories", "status"], env);
    assert.equal(verbose.status, 0, verbose.stderr);
    assert.equal(verbose.stdout, quiet.stdout);
    assert.equal(verbose.stderr.match(/DEBUG log: no log file reason=/g)?.length, 1, verbose.stderr);
    assert.match(verbose.stderr, /INFO cli: start /, "the lines still reach stderr");
  });

  test("a bad RELAY_LOG value is said once and ignored", async () => {
    const { home, env } = freshHome({ RELAY_LOG: "loud" });
    const r = await runRelayAsync(["memories", "status"], env);
    assert.equal(r.status, 0);
    assert.equal(
      r.stderr,
      "relay: RELAY_LOG=loud is not one of debug, info, warn, error; logging at info to the file only\n",
    );
    assert.ok(existsSync(logFile(home)));
  });

  test("an error nothing handled: 'relay: unexpected error: ... (details in <log>)', exit 1, the stack in the log", async () => {
    const driver = path.join(base, "crash.ts");
    const src = (f: string) => JSON.stringify(path.join(REPO_ROOT, "src/cli", f));
    writeFileSync(
      driver,
      `import { runCli } from ${src("entry.ts")};
import { buildProgram } from ${src("program.ts")};
void runCli(async () => {
  const p = await buildProgram();
  p.command("reject").action(async () => { throw new Error("kaboom in an action"); });
  p.command("throw-later").action(() => new Promise(() => setTimeout(() => { throw new Error("kaboom in a timer"); }, 0)));
  return p;
});
`,
    );
    for (const [cmd, message] of [
      ["reject", "kaboom in an action"],
      ["throw-later", "kaboom in a timer"],
    ] as const) {
      const { home, env } = freshHome();
      const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, [driver, cmd], { env, stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        c.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        c.once("close", (status) => resolve({ status, stderr }));
      });
      assert.equal(r.status, 1);
      assert.equal(r.stderr, `relay: unexpected error: ${message} (details in ${logFile(home)})\n`);
      const logged = logLines(logFile(home)).find((l) => l.level === "error" && l.msg === "unexpected error");
      const error = logged?.fields?.error as { message: string; stack: string } | undefined;
      assert.equal(error?.message, message);
      assert.match(error?.stack ?? "", /crash\.ts/, "the stack says where");
    }
  });
});
