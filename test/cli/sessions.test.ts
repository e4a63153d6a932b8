/**
 * `relay sessions list/show`, `relay run --fork` and `relay run --resume` without an id, as
 * real relay processes against the fake model server, on real rollout files.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { sessionsDir } from "../../src/home/home.ts";
import { bunPtyAvailable, spawnBunPty } from "../../src/process/spawn/pty-bun.ts";
import { listRollouts } from "../../src/rollout/find.ts";
import { readSessionMeta } from "../../src/rollout/reader.ts";
import { SessionListSchema } from "../../src/rollout/summary.ts";
import { SessionTranscriptSchema } from "../../src/rollout/transcript.ts";
import { type Harness, harness, inputOf } from "../session/run-support.ts";
import { reply } from "../support/fake-model-server.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { relayArgv, runRelayAsync } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";
import { until } from "../support/wait.ts";

const env = (home: string) => ({ ...process.env, RELAY_HOME: home, NO_COLOR: "1" });
const relay = (h: Harness, args: string[]) => runRelayAsync(args, env(h.home));
const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** One `relay run` against the fake server, which answers with `replies`. */
async function run(h: Harness, prompt: string, extra: string[] = [], ...replies: ReturnType<typeof reply>[]) {
  h.server.enqueue(...(replies.length ? replies : [reply().text(`answer to ${prompt}`)]));
  const r = await relay(h, [
    "run",
    "--base-url",
    h.server.baseUrl,
    "-m",
    "model-a",
    "-s",
    "danger-full-access",
    "-C",
    h.workspace,
    ...extra,
    prompt,
  ]);
  assert.equal(r.status, 0, r.stderr);
  return r;
}

function listJson(stdout: string) {
  return SessionListSchema.parse(JSON.parse(stdout));
}

describe("relay sessions", () => {
  test("an empty home lists no sessions yet and exits 0", async () => {
    await using h = await harness();
    const r = await relay(h, ["sessions", "list"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^no sessions yet/);
    const j = await relay(h, ["sessions", "list", "--json"]);
    assert.equal(j.status, 0, j.stderr);
    assert.deepEqual(listJson(j.stdout), { sessions: [], total: 0, more: 0, hidden: 0 });
  });

  test("after two runs: newest first, with id, time, cwd, first prompt, model and turns", async () => {
    await using h = await harness();
    await run(h, "first task", [], reply().toolCall("exec_command", { cmd: "echo one" }), reply().text("done one"));
    await run(h, "second task\nwith a second line");
    const ids = (await listRollouts(h.home)).map((f) => f.id);
    const j = listJson((await relay(h, ["sessions", "list", "--json"])).stdout);
    assert.equal(j.total, 2);
    assert.deepEqual(
      j.sessions.map((s) => s.id),
      ids,
      "newest first, like the files",
    );
    const [second, first] = j.sessions;
    assert.equal(second!.first_prompt, "second task with a second line", "one line");
    assert.equal(first!.first_prompt, "first task");
    for (const s of j.sessions) {
      assert.equal(s.cwd, h.workspace);
      assert.equal(s.model, "model-a");
      assert.equal(s.turns, 1);
      assert.equal(s.error, null);
    }
    const text = await relay(h, ["sessions", "list"]);
    assert.equal(text.status, 0, text.stderr);
    const [header, ...lines] = text.stdout.trimEnd().split("\n");
    assert.match(header!, /^SESSION +STARTED +TURNS +MODEL +CWD +PROMPT$/);
    assert.equal(lines.length, 2);
    assert.match(
      lines[0]!,
      new RegExp(`^${second!.id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  1 +model-a  .*  second task with a second line$`),
    );
    const limited = await relay(h, ["sessions", "list", "--limit", "1"]);
    assert.match(limited.stdout, /second task/);
    assert.doesNotMatch(limited.stdout, /first task/);
    assert.match(limited.stdout, /1 more \(--limit N or --all/);
    assert.equal((await relay(h, ["sessions", "list", "--limit", "0"])).status, 2);
  });

  test("a corrupt, a foreign and an empty rollout are listed with a reason; the command does not fail", async () => {
    await using h = await harness();
    await run(h, "a good one");
    const dir = path.join(sessionsDir(h.home), "2020", "01", "02");
    mkdirSync(dir, { recursive: true });
    const name = (n: number) =>
      path.join(dir, `rollout-2020-01-02T03-04-0${n}-0190aaaa-bbbb-7ccc-8ddd-00000000000${n}.jsonl`);
    writeFileSync(name(1), "this is not json\n");
    writeFileSync(name(2), '{"hello":"from another tool"}\n');
    writeFileSync(name(3), "");
    const r = await relay(h, ["sessions", "list", "--json"]);
    assert.equal(r.status, 0, r.stderr);
    const byId = new Map(listJson(r.stdout).sessions.map((s) => [s.id.slice(-1), s]));
    assert.match(byId.get("1")!.error!, /not a rollout: line 1: not valid JSON/);
    assert.match(byId.get("2")!.error!, /not a rollout: line 1: not a rollout line \(timestamp is missing/);
    assert.match(byId.get("3")!.error!, /empty/);
    assert.equal(listJson(r.stdout).sessions.filter((s) => s.error === null).length, 1);
    const text = await relay(h, ["sessions", "list"]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      /0190aaaa-bbbb-7ccc-8ddd-000000000001 .* unreadable: not a rollout: line 1: not valid JSON/,
    );
  });

  test("show by id prefix: meta, the prompt, the answer and the tool call with its output; --json has the schema", async () => {
    await using h = await harness();
    await run(
      h,
      "list the files",
      [],
      reply().text("looking").toolCall("exec_command", { cmd: "echo SHOWN-OUTPUT" }),
      reply().text("all listed"),
    );
    await run(h, "another session");
    const [, target] = await listRollouts(h.home);
    const prefix = target!.id.slice(0, 13);
    const r = await relay(h, ["sessions", "show", prefix]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^session  ${target!.id}\n`));
    assert.match(r.stdout, /── turn 1 · model-a · /);
    assert.match(r.stdout, /^user: list the files$/m);
    assert.match(r.stdout, /^assistant: looking$/m);
    assert.match(r.stdout, /^→ exec_command: echo SHOWN-OUTPUT\n {2}│ \[exit 0 · [\d.]+ s\]\n {2}│ SHOWN-OUTPUT$/m);
    assert.match(r.stdout, /^assistant: all listed$/m);
    assert.doesNotMatch(r.stdout, /another session/);
    const j = SessionTranscriptSchema.parse(
      JSON.parse((await relay(h, ["sessions", "show", prefix, "--json"])).stdout),
    );
    assert.equal(j.meta.id, target!.id);
    assert.deepEqual(
      j.entries.map((e) => e.kind),
      ["turn", "user", "assistant", "tool", "assistant"],
    );
    const missing = await relay(h, ["sessions", "show", "ffffffff-ffff"]);
    assert.equal(missing.status, 2);
    assert.match(
      missing.stderr,
      /no session id starts with "ffffffff-ffff" \(list sessions with `relay sessions list`\)/,
    );
  });
});

describe("relay run --fork", () => {
  test("a new session carries the history and the settings; the source file stays byte for byte the same", async () => {
    await using h = await harness();
    await run(
      h,
      "remember the word PLUM",
      [],
      reply().toolCall("exec_command", { cmd: "echo FROM-THE-SOURCE" }),
      reply().text("noted"),
    );
    const [source] = await listRollouts(h.home);
    const before = sha256(source!.path);
    h.server.enqueue(reply().text("the word was PLUM"));
    // No --base-url, -m or -C: they come from what the source recorded, as with --resume.
    const r = await relay(h, ["run", "--fork", source!.id.slice(0, 13), "which word?"]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`\\(forked from ${source!.id}\\)`));
    assert.equal(sha256(source!.path), before, "the source rollout is unchanged");
    const files = await listRollouts(h.home);
    assert.equal(files.length, 2, "a new rollout");
    const fork = files.find((f) => f.id !== source!.id)!;
    const meta = await readSessionMeta(fork.path);
    assert.ok("ok" in meta);
    assert.equal(meta.ok.forked_from_id, source!.id);
    assert.equal(meta.ok.forked_from_path, source!.path);
    assert.equal(meta.ok.cwd, h.workspace);
    const request = h.server.requests.at(-1)!;
    assert.equal(request.body.model, "model-a", "the recorded model");
    const input = JSON.stringify(inputOf(request.body));
    for (const earlier of ["remember the word PLUM", "FROM-THE-SOURCE", "noted", "which word?"])
      assert.ok(input.includes(earlier), `the request holds ${earlier}`);
    const j = listJson((await relay(h, ["sessions", "list", "--json"])).stdout);
    assert.equal(j.sessions[0]!.forked_from_id, source!.id);
    assert.equal(j.sessions[0]!.turns, 2, "the copied turn and its own");
  });

  test("a fork with no prompt and nothing unfinished is refused and leaves no file; --fork with --resume is a usage error", async () => {
    await using h = await harness();
    await run(h, "done already");
    const r = await relay(h, ["run", "--fork", "last"]);
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /has no unfinished turn; give the fork a prompt: relay run --fork [0-9a-f-]{36} "next request"/,
    );
    assert.equal((await listRollouts(h.home)).length, 1);
    const both = await relay(h, ["run", "--fork", "last", "--resume", "last", "x"]);
    assert.equal(both.status, 2);
    assert.match(both.stderr, /--resume and --fork cannot be combined/);
  });
});

describe("relay run --resume without an id", () => {
  test("without a terminal it is a usage error that says to pass an id or last", async () => {
    await using h = await harness();
    await run(h, "something");
    const r = await relay(h, ["run", "next", "--resume"]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--resume without an id picks a session on a terminal.*pass an id .* or last/);
    assert.equal(h.server.requests.length, 1, "nothing was sent");
    // The prompt written right after --resume is taken as its id: said, with the order that works.
    const swapped = await relay(h, ["run", "--resume", "fix the tests"]);
    assert.equal(swapped.status, 2);
    assert.match(swapped.stderr, /--resume took "fix the tests" for a session id.*relay run "fix the tests" --resume/);
    assert.equal(h.server.requests.length, 1, "nothing was sent");
  });

  const noPty = skipBecause("the --resume picker on a PTY", bunPtyAvailable() ? false : "PTYs need Bun");
  test("on a terminal it lists the sessions and resumes the one picked by number", { skip: noPty }, async () => {
    await using h = await harness();
    await run(h, "the OLDER session");
    await run(h, "the NEWER session");
    h.server.enqueue(reply().text("resumed"));
    const [cmd, ...pre] = relayArgv();
    const pty = spawnBunPty({
      argv: [cmd!, ...pre, "run", "follow up", "--resume"],
      cwd: REPO_ROOT,
      env: env(h.home) as Record<string, string>,
      tty: true,
      cols: 200,
    });
    assert.ok("ok" in pty, JSON.stringify(pty));
    let screen = "";
    let asked!: () => void;
    const question = new Promise<void>((r) => (asked = r));
    pty.ok.onData((b) => {
      screen += Buffer.from(b).toString("utf8");
      if (screen.includes("Resume which?")) asked();
    });
    await until(question, "the picker's question");
    assert.match(screen, /1 {2}\d{4}-.* the NEWER session/);
    assert.match(screen, /2 {2}\d{4}-.* the OLDER session/);
    pty.ok.write("2\r");
    const exit = await until(pty.ok.exited, "relay to finish");
    assert.equal(exit.code, 0, screen);
    const input = JSON.stringify(inputOf(h.server.requests.at(-1)!.body));
    assert.ok(input.includes("the OLDER session") && input.includes("follow up"), input);
    assert.ok(!input.includes("the NEWER session"), "the picked one, not the newest");
  });
});
