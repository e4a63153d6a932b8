/**
 * util/log.ts on its own, in one process: the record format, what is kept out of it, the filter
 * that passes a child's mirrored lines through, and rotation with two LogFile instances on one
 * path standing for two processes (test/cli/logs.test.ts races real ones).
 */
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, afterEach, describe, test } from "node:test";
import { humanLine, LOG_FILES_KEPT, Log, LogFile, logSettingsFromEnv, splitMirroredLines } from "../../src/util/log.ts";

const root = mkdtempSync(path.join(os.tmpdir(), "relay-log-unit-"));
let n = 0;
const freshDir = () => path.join(root, `d${++n}`, "logs");
const records = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map(
      (l) =>
        JSON.parse(l) as { level: string; pid: number; service: string; msg: string; fields?: Record<string, any> },
    );

describe("util/log", () => {
  after(() => rmSync(root, { recursive: true, force: true }));
  afterEach(() => Log.reset());

  test("unconfigured, records go nowhere; configured, one JSON line each at or above the level", () => {
    Log.create("t").error("dropped");
    assert.equal(Log.filePath(), undefined);
    const dir = freshDir();
    mkdirSync(path.dirname(dir));
    Log.configure({ dir, level: "info", stderr: false, maxBytes: 1 << 20 });
    const log = Log.create("unit");
    log.debug("below the level");
    log.info("hello", { n: 1, nothing: undefined });
    log.warn("no fields");
    const [a, b, ...rest] = records(path.join(dir, "relay.log"));
    assert.deepEqual(rest, []);
    assert.deepEqual(
      [a!.level, a!.service, a!.msg, a!.fields, a!.pid],
      ["info", "unit", "hello", { n: 1 }, process.pid],
    );
    assert.equal(b!.fields, undefined, "no empty fields object");
    assert.equal(Log.filePath(), path.join(dir, "relay.log"));
    assert.ok(log.enabled("warn") && !log.enabled("debug"));
  });

  test("fields: errors carry their stack, secret-looking keys are hidden at any depth, long strings are cut", () => {
    const dir = freshDir();
    mkdirSync(path.dirname(dir));
    Log.configure({ dir, level: "debug", stderr: false, maxBytes: 1 << 20 });
    Log.create("unit").error("failed", {
      error: new Error("boom"),
      api_key: "sk-secret",
      headers: { Authorization: "Bearer sk-secret" },
      text: "y".repeat(10_000),
    });
    const [r] = records(path.join(dir, "relay.log"));
    assert.equal(r!.fields!.error.message, "boom");
    assert.match(r!.fields!.error.stack, /log\.test\.(ts|mjs)/);
    assert.equal(r!.fields!.api_key, "[redacted]");
    assert.equal(r!.fields!.headers.Authorization, "[redacted]");
    assert.ok(r!.fields!.text.length < 4100 && r!.fields!.text.endsWith("more characters]"));
    assert.ok(!readFileSync(path.join(dir, "relay.log"), "utf8").includes("sk-secret"));
  });

  test("settings from the environment: RELAY_LOG sets the level and mirrors; bad values fall back with a note", () => {
    assert.deepEqual(logSettingsFromEnv({}, "/d"), {
      settings: { dir: "/d", level: "info", stderr: false, maxBytes: 4 * 1024 * 1024 },
      problems: [],
    });
    assert.deepEqual(logSettingsFromEnv({ RELAY_LOG: "WARN", RELAY_LOG_MAX_BYTES: "100" }, "/d").settings, {
      dir: "/d",
      level: "warn",
      stderr: true,
      maxBytes: 100,
    });
    const bad = logSettingsFromEnv({ RELAY_LOG: "loud", RELAY_LOG_MAX_BYTES: "-1" }, "/d");
    assert.deepEqual([bad.settings.level, bad.settings.stderr, bad.problems.length], ["info", false, 2]);
  });

  test("a child's mirrored lines are told from its other stderr, also when a chunk ends inside one", () => {
    const line = humanLine(new Date(), "info", "executor", "serving", {
      tools: 6,
      note: "two words",
      error: new Error("e"),
    });
    assert.match(
      line,
      /^relay\[\d+\] \d\d:\d\d:\d\d\.\d{3} INFO executor: serving tools=6 note="two words" error=e\n$/,
    );
    assert.deepEqual(splitMirroredLines(`relay: a real error\n${line}partial`), {
      log: line,
      other: "relay: a real error\npartial",
      rest: "",
    });
    const cut = line.length - 10;
    const first = splitMirroredLines(`x\n${line.slice(0, cut)}`);
    assert.deepEqual(first, { log: "", other: "x\n", rest: line.slice(0, cut) });
    assert.deepEqual(splitMirroredLines(first.rest + line.slice(cut)), { log: line, other: "", rest: "" });
    assert.deepEqual(splitMirroredLines("rel"), { log: "", other: "", rest: "rel" }, "may still become a log line");
  });

  test("rotation: past the size relay.log becomes relay.log.1, and so on; the oldest beyond the kept ones goes", () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "relay.log");
    const f = new LogFile(file, 100, () => {});
    for (let i = 0; i < 10; i++) f.write(`${JSON.stringify({ i, pad: "x".repeat(60) })}\n`);
    f.close();
    const names = readdirSync(dir).sort();
    assert.deepEqual(names, ["relay.log", ...Array.from({ length: LOG_FILES_KEPT }, (_, i) => `relay.log.${i + 1}`)]);
    const order = [...names.slice(1).reverse(), "relay.log"].map((x) =>
      readFileSync(path.join(dir, x), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).i as number),
    );
    assert.deepEqual(order.flat(), [6, 7, 8, 9], "the newest lines, oldest file first, one line per file at this size");
  });

  test("two processes: the one that did not rotate follows to the new relay.log instead of rotating again", () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "relay.log");
    const line = (who: string, i: number) => `${JSON.stringify({ who, i, pad: "x".repeat(40) })}\n`;
    const size = 4 * line("a", 0).length + 10;
    const a = new LogFile(file, size, () => {});
    const b = new LogFile(file, size, () => {});
    a.write(line("a", 0));
    b.write(line("b", 0));
    a.write(line("a", 1));
    b.write(line("b", 1)); // just under the size: still one file
    a.write(line("a", 2)); // over: a rotates
    b.write(line("b", 2)); // b's file is relay.log.1 now and over the size: b follows, no second rotation
    a.close();
    b.close();
    assert.deepEqual(readdirSync(dir).sort(), ["relay.log", "relay.log.1"]);
    const ids = (x: string) =>
      readFileSync(path.join(dir, x), "utf8")
        .trim()
        .split("\n")
        .map((l) => {
          const r = JSON.parse(l);
          return `${r.who}${r.i}`;
        });
    assert.deepEqual(ids("relay.log.1"), ["a0", "b0", "a1", "b1"]);
    assert.deepEqual(ids("relay.log"), ["a2", "b2"]);
  });

  test("a rotation lock left by a killed process is taken over once stale", () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, "relay.log");
    writeFileSync(`${file}.lock`, "");
    const f = new LogFile(file, 50, () => {});
    const line = `${JSON.stringify({ pad: "x".repeat(60) })}\n`;
    f.write(line);
    f.write(line); // the lock is held: written on, not rotated
    assert.ok(!existsSync(`${file}.1`));
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    f.write(line); // stale: removed, this line still written on
    f.write(line); // rotates
    f.close();
    assert.deepEqual(readdirSync(dir).sort(), ["relay.log", "relay.log.1"]);
  });

  test("no usable directory: nothing thrown, no file, and the reason told once; a missing home is not created", () => {
    const notADir = freshDir();
    mkdirSync(path.dirname(notADir));
    writeFileSync(notADir, "a file\n");
    const told: string[] = [];
    const f = new LogFile(path.join(notADir, "relay.log"), 1000, (r) => told.push(r));
    f.write("a\n");
    f.write("b\n");
    assert.equal(f.usable(), false);
    assert.equal(told.length, 1);
    assert.match(f.problem ?? "", /ENOTDIR|not a directory/);

    const home = path.join(root, "not-yet");
    const later = new LogFile(path.join(home, "logs", "relay.log"), 1000, () => {});
    later.write("lost\n");
    assert.ok(!existsSync(home), "the log does not create RELAY_HOME");
    mkdirSync(home);
    later.write("kept\n");
    later.close();
    assert.equal(readFileSync(path.join(home, "logs", "relay.log"), "utf8"), "kept\n");
  });
});
