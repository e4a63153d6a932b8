import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ExecutorMethods, ProcessExitedNotification } from "../../src/contracts/executor.ts";
import { findTree } from "../../src/process/kill-tree.ts";
import type { ChildPeer } from "../../src/protocol/child.ts";
import { VERSION } from "../../src/version.ts";
import { exec, isAlive, outputUntil, startExecutor, write, writeUntilExit } from "../support/executor.ts";
import { skipBecause } from "../support/skip.ts";
import { Inbox, until, waitFor } from "../support/wait.ts";

const hasPty = Boolean(process.versions.bun);

/** The command lines of `pid`'s living children, from /proc. */
function childrenOf(pid: number): string[] {
  const out: string[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").join(" "));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
const hasPython =
  existsSync("/usr/bin/python3") ||
  existsSync("/usr/local/bin/python3") ||
  Boolean(process.env.PATH?.split(":").some((d) => existsSync(`${d}/python3`)));

describe("relay executor", () => {
  let ex: ChildPeer;
  before(async () => {
    ex = await startExecutor();
  });
  after(async () => {
    await ex.shutdown();
  });

  test("advertises its tool specs with JSON schemas", async () => {
    const r = await ex.peer.call(ExecutorMethods.toolsList, {});
    assert.ok("ok" in r);
    const names = r.ok.tools.map((t) => t.name);
    assert.deepEqual(names.sort(), [
      "apply_patch",
      "exec_command",
      "grep_files",
      "list_dir",
      "read_file",
      "write_stdin",
    ]);
    const execSpec = r.ok.tools.find((t) => t.name === "exec_command")!;
    assert.equal(execSpec.route, "exec");
    assert.deepEqual((execSpec.input_schema as { required: string[] }).required, ["cmd"]);
    assert.ok((execSpec.input_schema as { properties: Record<string, unknown> }).properties.tty);
  });

  test("a short command returns its output and exit code and no process id", async () => {
    const r = await exec(ex, { command: ["sh", "-c", "echo hello; echo err >&2"] });
    assert.equal(r.exit_code, 0);
    assert.equal(r.process_id, undefined);
    // stdout and stderr are two pipes merged as they arrive: their relative order is not defined.
    assert.deepEqual(r.output.split("\n").sort(), ["", "err", "hello"]);
    assert.match(r.chunk_id, /^[0-9a-f]{6}$/);
  });

  // The test's own timeout is below the 30 s yield: waiting for the yield instead of the exit fails it.
  test("a process that exits before the first poll returns early, without a process id", {
    timeout: 20_000,
  }, async () => {
    const r = await exec(ex, { command: ["sleep", "0.05"], yield_time_ms: 30_000 });
    assert.equal(r.exit_code, 0);
    assert.equal(r.process_id, undefined);
  });

  test("`relay` in a command is the executor's own relay, first on PATH, even where PATH has another", async () => {
    const decoy = mkdtempSync(path.join(os.tmpdir(), "relay-decoy-"));
    try {
      writeFileSync(path.join(decoy, "relay"), "#!/bin/sh\necho decoy\n", { mode: 0o755 });
      const r = await exec(ex, {
        command: ["sh", "-c", "command -v relay; relay --version"],
        env: { PATH: `${decoy}:/usr/bin:/bin` },
      });
      assert.equal(r.exit_code, 0, r.output);
      const [where, version] = r.output.trim().split("\n");
      assert.match(where ?? "", /relay-path-[^/]+\/relay$/);
      assert.equal(version, VERSION);
    } finally {
      rmSync(decoy, { recursive: true, force: true });
    }
  });

  test("pipes: exit codes are kept, stdin is not a tty and writing to it is refused", async () => {
    const r = await exec(ex, { command: ["sh", "-c", "test -t 0 && echo tty || echo notty; exit 17"] });
    assert.equal(r.exit_code, 17);
    assert.equal(r.output, "notty\n");
    const long = await exec(ex, { command: ["sleep", "30"], yield_time_ms: 250 });
    assert.equal(typeof long.process_id, "number");
    const w = await ex.peer.call(ExecutorMethods.write, { process_id: long.process_id!, input: "x\n" });
    assert.ok("error" in w);
    assert.equal(
      w.error.message,
      "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open",
    );
    assert.deepEqual(await ex.peer.call(ExecutorMethods.terminate, { process_id: long.process_id! }), {
      ok: { running: true },
    });
  });

  test("forced environment wins over what the orchestrator sent; PATH is kept, after relay's own directory", async () => {
    const r = await exec(ex, {
      command: ["env"],
      env: { PATH: process.env.PATH!, NO_COLOR: "0", TERM: "xterm-256color", MY_VAR: "kept" },
    });
    const env = Object.fromEntries(
      r.output
        .trim()
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    assert.equal(env.NO_COLOR, "1");
    assert.equal(env.TERM, "dumb");
    assert.equal(env.LANG, "C.UTF-8");
    assert.equal(env.LC_ALL, "C.UTF-8");
    assert.equal(env.PAGER, "cat");
    assert.equal(env.GIT_PAGER, "cat");
    assert.equal(env.MY_VAR, "kept");
    const [first, ...rest] = env.PATH!.split(":");
    assert.match(first!, /relay-path-[^/]+$/);
    assert.deepEqual(
      rest,
      process.env.PATH!.split(":").filter((d) => d !== ""),
    );
    assert.equal(env.GIT_TERMINAL_PROMPT, "0", "pipe mode asks tools not to prompt");
    assert.equal(env.HOME, undefined, "nothing is inherited from the executor's own environment");
  });

  test("output over the token budget is cut in the middle with the original count", async () => {
    const r = await exec(ex, {
      command: ["sh", "-c", "for i in $(seq 1 200); do echo line $i; done"],
      max_output_tokens: 6,
    });
    assert.equal(r.truncated, true);
    assert.match(r.output, /^Total output lines: 200\n\nline 1\n.*…\d+ tokens truncated….*line 200\n$/s);
    assert.ok(r.original_token_count > 6);
  });

  test("a long-running server is polled several times; each poll returns only new output", async () => {
    // The server runs on this test's own runtime, so the test needs no other tool.
    const script =
      "const s=require('http').createServer((q,r)=>{console.log('GET',q.url);r.end('ok')});s.listen(0,'127.0.0.1',()=>console.log('port',s.address().port))";
    const started = await exec(ex, { command: [process.execPath, "-e", script], yield_time_ms: 1500 });
    const id = started.process_id!;
    assert.equal(typeof id, "number");
    assert.equal(started.exit_code, undefined);
    const port = Number(/port (\d+)/.exec(started.output)?.[1]);
    assert.ok(port > 0, started.output);
    await fetch(`http://127.0.0.1:${port}/first`).then((r) => r.text());
    const p1 = await write(ex, id, "", { yield_time_ms: 250 });
    assert.equal(p1.process_id, id);
    assert.match(p1.output, /GET \/first/);
    assert.doesNotMatch(p1.output, /port/, "earlier output is not repeated");
    await fetch(`http://127.0.0.1:${port}/second`).then((r) => r.text());
    const p2 = await write(ex, id, "", { yield_time_ms: 250 });
    assert.match(p2.output, /GET \/second/);
    assert.doesNotMatch(p2.output, /first/);
    assert.ok(p2.wall_time_seconds >= 4.9, "an empty poll waits at least 5 s while the process runs");
    await ex.peer.call(ExecutorMethods.terminate, { process_id: id });
    const gone = await ex.peer.call(ExecutorMethods.write, { process_id: id, input: "" });
    assert.ok("error" in gone && gone.error.message === `Unknown process id ${id}`);
  });

  test("5 MB of output keeps head and tail and the executor's memory stays bounded", async () => {
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${ex.pid}/status`, "utf8"))?.[1]) * 1024;
    const before = rss();
    const r = await exec(ex, {
      command: ["sh", "-c", "echo START; head -c 5000000 /dev/zero | tr '\\0' 'a'; echo; echo END"],
      max_output_tokens: 1000,
    });
    assert.equal(r.exit_code, 0);
    assert.ok(r.output.includes("START"), "head kept");
    assert.ok(r.output.trimEnd().endsWith("END"), "tail kept");
    assert.ok(r.omitted_bytes > 3_900_000, `omitted ${r.omitted_bytes}`);
    assert.ok(r.original_token_count > 250_000);
    const grew = rss() - before;
    assert.ok(grew < 64 * 1024 * 1024, `executor RSS grew by ${(grew / 1048576).toFixed(1)} MiB`);
  });

  /** A held full output, read back in the pieces `process/read_output` gives. */
  async function readFull(id: string): Promise<string> {
    const parts: Buffer[] = [];
    for (let offset = 0; ; ) {
      const r = await ex.peer.call(ExecutorMethods.readOutput, { id, offset });
      assert.ok("ok" in r, JSON.stringify(r));
      parts.push(Buffer.from(r.ok.data_base64, "base64"));
      if (r.ok.done) return Buffer.concat(parts).toString("utf8");
      offset = r.ok.next_offset;
    }
  }

  test("keep_full_output: a result cut for the model holds its whole output (5 MB, past the 1 MiB buffer) until it is read", async () => {
    const r = await exec(ex, {
      command: ["sh", "-c", "echo START; head -c 5000000 /dev/zero | tr '\\0' 'a'; echo; echo END"],
      max_output_tokens: 1000,
      keep_full_output: true,
    });
    assert.equal(r.exit_code, 0);
    assert.ok(r.truncated && r.full_output, JSON.stringify({ ...r, output: r.output.length }));
    assert.equal(r.omitted_bytes, 0, "nothing was dropped");
    assert.equal(r.full_output.dropped_bytes, 0);
    const expected = `START\n${"a".repeat(5_000_000)}\nEND\n`;
    assert.equal(r.full_output.bytes, expected.length);
    assert.equal(r.original_token_count, Math.ceil(expected.length / 4), "the count is of the whole output");
    assert.deepEqual(r.full_output.cut_lines, { from: 2, to: 2 });
    assert.ok(r.output.startsWith("Total output lines: 3\n\nSTART\naaa") && r.output.endsWith("aaa\nEND\n"));
    assert.ok((await readFull(r.full_output.id)) === expected, "the held text is the whole output");
    const again = await ex.peer.call(ExecutorMethods.readOutput, { id: r.full_output.id, offset: 0 });
    assert.ok("error" in again, "read to its end, it is let go");
  });

  test("keep_full_output: a cut output the buffer could hold is held too; an uncut one is not", async () => {
    const r = await exec(ex, { command: ["seq", "1", "20000"], max_output_tokens: 1000, keep_full_output: true });
    assert.ok(r.full_output, "cut, so held");
    assert.equal(await readFull(r.full_output.id), Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join(""));
    const small = await exec(ex, { command: ["seq", "1", "10"], keep_full_output: true });
    assert.equal(small.full_output, undefined);
  });

  test("bad requests get clear errors and the executor keeps serving", async () => {
    const empty = await ex.peer.call(ExecutorMethods.exec, { command: [], cwd: "/", env: {} });
    assert.ok(
      "error" in empty && empty.error.code === "invalid_params" && /argv\) must not be empty/.test(empty.error.message),
    );
    const relative = await ex.peer.call(ExecutorMethods.exec, { command: ["true"], cwd: "relative/dir", env: {} });
    assert.ok("error" in relative && /cwd must be an absolute path/.test(relative.error.message));
    const missing = await ex.peer.call(ExecutorMethods.exec, { command: ["/no/such/binary"], cwd: "/", env: {} });
    assert.ok("error" in missing && missing.error.code === "spawn_failed", JSON.stringify(missing));
    assert.match((missing as { error: { message: string } }).error.message, /could not start "\/no\/such\/binary"/);
    const unknown = await ex.peer.call(ExecutorMethods.write, { process_id: 4242, input: "" });
    assert.ok("error" in unknown && unknown.error.message === "Unknown process id 4242");
    const forbidden = await ex.peer.call(ExecutorMethods.exec, {
      command: ["true"],
      cwd: "/",
      env: {},
      exec_approval_requirement: { type: "forbidden", reason: "rm -rf is blocked" },
    });
    assert.ok("error" in forbidden && forbidden.error.code === "forbidden");
    const denied = await ex.peer.call(ExecutorMethods.exec, {
      command: ["true"],
      cwd: "/",
      env: {},
      exec_approval_requirement: { type: "needs_approval", approved: false },
    });
    assert.ok("error" in denied && denied.error.code === "approval_required");
    const escalate = await ex.peer.call(ExecutorMethods.exec, {
      command: ["true"],
      cwd: "/",
      env: {},
      sandbox_permissions: "require_escalated",
    });
    assert.ok("error" in escalate && escalate.error.code === "escalation_not_approved");
    const tool = await ex.peer.call(ExecutorMethods.toolsCall, { name: "nope", arguments: {}, cwd: "/" });
    assert.ok("error" in tool && /unknown tool "nope"/.test(tool.error.message));
    assert.equal((await exec(ex, { command: ["true"] })).exit_code, 0);
  });

  test("file tools run on the executor host", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "relay-ft-"));
    try {
      writeFileSync(path.join(dir, "a.txt"), "one\ntwo\n");
      const r = await ex.peer.call(ExecutorMethods.toolsCall, {
        name: "read_file",
        arguments: { file_path: "a.txt" },
        cwd: dir,
      });
      assert.ok("ok" in r, JSON.stringify(r));
      assert.match(r.ok.text, /L1: one\nL2: two/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("relay executor: PTY sessions", { skip: !hasPty && "PTY needs Bun" }, () => {
  let ex: ChildPeer;
  before(async () => {
    ex = await startExecutor();
  });
  after(async () => {
    await ex.shutdown();
  });

  test("interactive bash keeps state across writes", async () => {
    const s = await exec(ex, {
      command: ["bash", "--norc", "--noprofile", "-i"],
      tty: true,
      yield_time_ms: 500,
      env: { PATH: process.env.PATH!, PS1: "$ " },
    });
    const id = s.process_id!;
    assert.equal(typeof id, "number");
    await write(ex, id, "export RELAY_T=persisted\n");
    const asked = await write(ex, id, "echo value=$RELAY_T; test -t 0 && echo istty\n", { yield_time_ms: 1000 });
    const r = await outputUntil(ex, id, /istty/, asked);
    assert.match(r.output, /value=persisted/);
    assert.match(r.output, /istty/);
    assert.doesNotMatch(r.output, /\r/, "CRLF from the terminal is normalised");
    const bye = await writeUntilExit(ex, id, "exit 5\n");
    assert.equal(bye.exit_code, 5);
    assert.equal(bye.process_id, undefined);
  });

  test("interactive python over a PTY", {
    skip: skipBecause("interactive python over a PTY", !hasPython && "python3 is not installed"),
  }, async () => {
    const s = await exec(ex, { command: ["python3", "-i", "-q"], tty: true, yield_time_ms: 1500 });
    const id = s.process_id!;
    try {
      assert.match((await outputUntil(ex, id, />>>/, s)).output, />>>/);
      const answer = await outputUntil(ex, id, /42/, await write(ex, id, "print(6*7)\n", { yield_time_ms: 1000 }));
      assert.match(answer.output, /42/);
      const bye = await writeUntilExit(ex, id, "exit()\n");
      assert.equal(bye.exit_code, 0);
      assert.equal(bye.process_id, undefined);
    } finally {
      // A failure above must not leave python among the next test's stored processes.
      await ex.peer.call(ExecutorMethods.terminate, { process_id: id });
    }
  });

  test("cat on a tty ends on EOF (Ctrl-D) with exit 0 and the id is released", async () => {
    const s = await exec(ex, { command: ["/bin/cat"], tty: true, yield_time_ms: 250 });
    const id = s.process_id!;
    assert.ok(id >= 1000);
    assert.equal(s.exit_code, undefined);
    const echo = await write(ex, id, "ping\n");
    assert.equal(echo.process_id, id);
    assert.match((await outputUntil(ex, id, /ping/, echo)).output, /ping/);
    const eof = await writeUntilExit(ex, id, "\u0004");
    assert.equal(eof.exit_code, 0);
    assert.equal(eof.process_id, undefined);
    const after = await ex.peer.call(ExecutorMethods.write, { process_id: id, input: "" });
    assert.ok("error" in after && after.error.message === `Unknown process id ${id}`);
  });

  test("a spinner's carriage returns collapse to what the terminal shows", async () => {
    const r = await exec(ex, {
      command: ["sh", "-c", "printf 'progress 10%%\\rprogress 50%%\\rprogress 100%%\\ndone\\n'"],
      tty: true,
    });
    assert.equal(r.output, "progress 100%\ndone\n");
  });

  test("65 open processes: the least recently used exited one is pruned first, the 8 most recent are protected", async () => {
    // Wait for it to exit without touching it (a write would count as use): the executor announces the exit.
    const exits = new Inbox<number>();
    ex.peer.onNotification(ProcessExitedNotification, (n) => exits.push(n.process_id));
    const first = await exec(ex, { command: ["/bin/cat"], tty: true, yield_time_ms: 250 });
    const shortLived = await exec(ex, { command: ["sleep", "0.4"], yield_time_ms: 250 });
    assert.ok(shortLived.process_id);
    // Other stored processes may exit meanwhile: their announcements are skipped.
    while ((await until(exits.next(), "the short-lived process to exit")) !== shortLived.process_id);
    const l = await ex.peer.call(ExecutorMethods.list, {}); // a listing does not count as use
    assert.ok(
      "ok" in l && l.ok.processes.some((p) => p.process_id === shortLived.process_id && !p.running),
      "the short-lived process exited",
    );
    const rest = await Promise.all(
      Array.from({ length: 61 }, () => exec(ex, { command: ["sleep", "60"], yield_time_ms: 250 })),
    );
    assert.ok(rest.every((r) => r.process_id));
    await write(ex, first.process_id!, "still here\n"); // touch: now among the most recent
    const listed = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in listed);
    assert.equal(listed.ok.processes.length, 63);
    // two more: the store reaches 64, then one must go
    await exec(ex, { command: ["sleep", "60"], yield_time_ms: 250 });
    const last = await exec(ex, { command: ["sleep", "60"], yield_time_ms: 250 });
    const after = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in after);
    assert.equal(after.ok.processes.length, 64);
    const ids = new Set(after.ok.processes.map((p) => p.process_id));
    assert.ok(!ids.has(shortLived.process_id!), "the exited process was pruned first");
    assert.ok(ids.has(first.process_id!) && ids.has(last.process_id!));
    const echo = await write(ex, first.process_id!, "alive\n");
    assert.match(echo.output, /alive/);
    // one more: no exited process left, so the least recently used running one goes and dies
    const oldest = rest[0]!;
    const oldestPid = after.ok.processes.find((p) => p.process_id === oldest.process_id)!.pid;
    await exec(ex, { command: ["sleep", "60"], yield_time_ms: 250 });
    const gone = await ex.peer.call(ExecutorMethods.write, { process_id: oldest.process_id!, input: "" });
    assert.ok("error" in gone && /Unknown process id/.test(gone.error.message));
    await waitFor(() => !isAlive(oldestPid), "the pruned process to be killed");
  });
});

describe("relay executor: lifetime", () => {
  test("when the executor is SIGKILLed, every process it started dies, including background jobs", async () => {
    const ex = await startExecutor();
    const pipe = await exec(ex, { command: ["sh", "-c", "sleep 1000 & sleep 1001"], yield_time_ms: 300 });
    assert.ok(pipe.process_id);
    const listed = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in listed);
    const pids = listed.ok.processes.flatMap((p) => findTree(p.pid));
    assert.ok(pids.length >= 3, `tree: ${pids}`);
    assert.ok(pids.every(isAlive));
    ex.kill("SIGKILL");
    await ex.exited;
    await waitFor(() => pids.every((p) => !isAlive(p)), `every process of the tree to die (${pids.join(", ")})`);
  });

  test("the death guard starts with the first process: an executor that starts none runs no guard shell", {
    skip: skipBecause("the lazy death guard", !process.versions.bun && "elsewhere the guard starts with the executor"),
  }, async () => {
    const ex = await startExecutor();
    const guards = () => childrenOf(ex.child.pid!).filter((cmd) => cmd.includes("relay-death-guard"));
    const info = await ex.peer.call(ExecutorMethods.info, {});
    assert.ok("ok" in info);
    assert.deepEqual(guards(), [], "no guard before any process");
    await exec(ex, { command: ["true"] });
    assert.equal(guards().length, 1, "the first command started the guard");
    await exec(ex, { command: ["true"] });
    assert.equal(guards().length, 1, "one guard for the executor's lifetime");
    assert.equal((await ex.shutdown()).code, 0);
  });

  test("closing the executor's stdin ends it and its children", async () => {
    const ex = await startExecutor();
    await exec(ex, { command: ["sleep", "1000"], yield_time_ms: 250 });
    const listed = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in listed);
    const pid = listed.ok.processes[0]!.pid;
    const exit = await ex.shutdown();
    assert.equal(exit.code, 0);
    await waitFor(() => !isAlive(pid), "the executor's child to die");
  });
});
