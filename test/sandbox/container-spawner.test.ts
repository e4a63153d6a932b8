/**
 * The executor's container init spawns sandboxed pipe-mode commands itself (init-loop.ts,
 * spawner.ts): through a real executor, and straight on an init's channel with requests the
 * executor would never send. Real processes, namespaces and sockets; waits are for events.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ExecutorMethods } from "../../src/contracts/executor.ts";
import type { SandboxPolicy } from "../../src/contracts/sandbox-policy.ts";
import { exitOfWaitStatus } from "../../src/process/spawn/signals.ts";
import type { ChildPeer } from "../../src/protocol/child.ts";
import { planBuiltin, probeSandbox } from "../../src/sandbox/index.ts";
import {
  loadNative,
  makePair,
  type Native,
  SPAWN_DEADLINE_MS,
  spawnChild,
  spawnMode,
} from "../../src/sandbox/linux/confine-cc.ts";
import { type StartedContainer, startContainer } from "../../src/sandbox/linux/container.ts";
import { Scope } from "../../src/sandbox/linux/landlock-plan.ts";
import { decodeNativeError, Stage } from "../../src/sandbox/linux/stages.ts";
import { exec, isAlive, startExecutor, write } from "../support/executor.ts";
import { relayArgv } from "../support/self.ts";
import { skipBecause } from "../support/skip.ts";
import { waitFor } from "../support/wait.ts";

const support = await probeSandbox();
const skip = skipBecause(
  "the container's init as spawner",
  support.mechanism === "landlock" ? false : `the built-in sandbox cannot run here: ${support.detail}`,
);
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

/** Pids of container inits whose parent is `ppid`. */
function initsOf(ppid: number): number[] {
  return readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return (
          Number(statField(Number(e), 4)) === ppid &&
          readFileSync(`/proc/${e}/cmdline`, "latin1").split("\0").includes("--container-init")
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Field `n` (1-based, as proc(5) numbers them) of /proc/PID/stat. */
function statField(pid: number, n: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[n - 3];
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1");
  } catch {
    return undefined;
  }
}

/** Children of `pid` running a warm helper (`__sandbox-exec --wait`). */
function helpersOf(pid: number): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((p) => Number.isInteger(p) && statField(p, 4) === String(pid))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "latin1").includes("--wait");
      } catch {
        return false;
      }
    });
}

/** Why this process cannot make mounts on the host (they need root), or false. */
function noHostMounts(): string | false {
  if (process.getuid?.() !== 0) return "making a mount on the host needs root";
  const probe = mkdtempSync(path.join(os.tmpdir(), "relay-mount-probe-"));
  try {
    const bound = spawnSync("mount", ["--bind", probe, probe]);
    if (bound.status !== 0)
      return `mount --bind fails here: ${bound.stderr?.toString().trim() || bound.error?.message}`;
    spawnSync("umount", [probe]);
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}
const hostMountsSkip = skip || skipBecause("the kept namespace's mount propagation test", noHostMounts());

describe("the container's init spawns sandboxed commands", { skip }, () => {
  let ws = "";
  before(() => {
    ws = mkdtempSync(path.join(os.tmpdir(), "relay-spawner-"));
    mkdirSync(path.join(ws, ".git"));
  });
  after(() => rmSync(ws, { recursive: true, force: true }));
  const policy = (): SandboxPolicy => ({ mode: "workspace-write", writable_roots: [ws], network: false });
  /** Starts `script`, which keeps running; its first answer and its pid as the executor lists it. */
  const startLongOne = async (ex: ChildPeer, script: string) => {
    const started = await exec(ex, {
      command: ["sh", "-c", script],
      cwd: ws,
      env,
      sandbox: policy(),
      yield_time_ms: 2_000,
    });
    assert.ok(started.process_id !== undefined, started.output);
    const list = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in list);
    return { started, pid: list.ok.processes.find((p) => p.process_id === started.process_id)!.pid };
  };

  test("a session's setup starts no container (info `later`, the sandbox check); info `start` starts it without waiting", async () => {
    await using ex = await startExecutor();
    assert.ok("ok" in (await ex.peer.call(ExecutorMethods.info, { containment: "later" })));
    const check = await ex.peer.call(ExecutorMethods.sandboxCheck, { sandbox: policy(), cwd: ws, env });
    assert.ok("ok" in check, JSON.stringify(check));
    // A command answered after both: the executor has handled them, and has still not started an init.
    const r = await exec(ex, { command: ["true"], cwd: ws, env, sandbox: { mode: "danger-full-access" } });
    assert.equal(r.exit_code, 0, r.output);
    assert.deepEqual(initsOf(ex.pid!), [], "no init while the session is set up");
    const started = await ex.peer.call(ExecutorMethods.info, { containment: "start" });
    assert.ok("ok" in started);
    assert.equal(started.ok.sandbox.containment, undefined, "answered without waiting for it");
    await waitFor(() => initsOf(ex.pid!).length === 1, "the container's init to start");
  });

  test("twelve at once: each its own output and exit status, no helper process, the init as parent", async () => {
    await using ex = await startExecutor();
    const check = await ex.peer.call(ExecutorMethods.sandboxCheck, { sandbox: policy(), cwd: ws, env });
    assert.ok("ok" in check, JSON.stringify(check));
    const runs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        exec(ex, {
          command: [
            "sh",
            "-c",
            `echo "out-${i} ppid:$PPID"; echo err-${i} >&2; (echo x > .git/x) 2>/dev/null || echo git-read-only; exit ${i}`,
          ],
          cwd: ws,
          env,
          sandbox: policy(),
          yield_time_ms: 20_000,
        }),
      ),
    );
    runs.forEach((r, i) => {
      assert.equal(r.exit_code, i);
      assert.equal(r.output, `out-${i} ppid:1\nerr-${i}\ngit-read-only\n`);
    });
    assert.deepEqual(helpersOf(ex.pid!), [], "no spare helper was started");
    const info = await ex.peer.call(ExecutorMethods.info, {});
    assert.ok("ok" in info);
    assert.deepEqual(info.ok.sandbox.warm_helpers, { hits: 0, misses: 0 }, "no command went through a helper");
  });

  test("thirty commands leave no descriptor open in the executor or in the init", async () => {
    await using ex = await startExecutor();
    const run = () => exec(ex, { command: ["sh", "-c", "echo $PPID"], cwd: ws, env, sandbox: policy() });
    assert.equal((await run()).output, "1\n");
    const init = readdirSync("/proc")
      .map(Number)
      .find((p) => statField(p, 4) === String(ex.pid) && (cmdlineOf(p) ?? "").includes("--container-init"))!;
    assert.ok(init, "the executor's container init");
    const open = () => [readdirSync(`/proc/${ex.pid}/fd`).length, readdirSync(`/proc/${init}/fd`).length];
    const before = open();
    for (let i = 0; i < 30; i++) assert.equal((await run()).output, "1\n");
    // The last command's output pipe is closed as its reader ends, which may be just after the
    // answer; and `before` may have counted the first command's pidfd, held until its release.
    await waitFor(
      () => open().every((n, i) => n <= before[i]!),
      `descriptors back to at most ${before.join(" and ")}, not ${open().join(" and ")}`,
    );
  });

  test("twelve policies in turn: the init keeps what eight of them need, no more, and every command is confined", async () => {
    const roots = Array.from({ length: 12 }, () => mkdtempSync(path.join(os.tmpdir(), "relay-kept-many-")));
    try {
      await using ex = await startExecutor();
      const run = (root: string) =>
        exec(ex, {
          command: ["sh", "-c", "(echo x > .git/x) 2>/dev/null || echo git-read-only; echo x > ok && echo wrote"],
          cwd: root,
          env,
          sandbox: { mode: "workspace-write", writable_roots: [root], network: false },
        });
      for (const root of roots) mkdirSync(path.join(root, ".git"));
      assert.equal((await run(roots[0]!)).output, "git-read-only\nwrote\n");
      const init = readdirSync("/proc")
        .map(Number)
        .find((p) => statField(p, 4) === String(ex.pid) && (cmdlineOf(p) ?? "").includes("--container-init"))!;
      const openInInit = () => readdirSync(`/proc/${init}/fd`).length;
      // One policy kept: its ruleset and its two namespaces.
      const withOne = openInInit();
      for (const root of roots) assert.equal((await run(root)).output, "git-read-only\nwrote\n", root);
      // Eight kept at most, each a ruleset and two namespaces: seven more than with one.
      await waitFor(
        () => openInInit() <= withOne + 7 * 3,
        `at most 8 kept (${openInInit()} fds open, ${withOne} with one)`,
      );
      assert.equal((await run(roots[0]!)).output, "git-read-only\nwrote\n", "an evicted policy is made again");
    } finally {
      for (const root of roots) rmSync(root, { recursive: true, force: true });
    }
  });

  test("a writable root renamed away and made again: the kept ruleset is built anew, the new one writable and the moved one not", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-kept-ruleset-"));
    const moved = `${root}.moved`;
    try {
      await using ex = await startExecutor();
      // Temp dirs are not writable here: the root and its moved copy both live in one.
      const sandbox: SandboxPolicy = {
        mode: "workspace-write",
        writable_roots: [root],
        network: false,
        tmp_writable: false,
      };
      const touch = (file: string) =>
        exec(ex, { command: ["sh", "-c", `touch '${file}' 2>&1`], cwd: root, env, sandbox });
      assert.equal((await touch(path.join(root, "a"))).exit_code, 0);
      renameSync(root, moved);
      mkdirSync(root);
      const fresh = await touch(path.join(root, "b"));
      assert.equal(fresh.exit_code, 0, `the new directory at the root's path is writable: ${fresh.output}`);
      const old = await touch(path.join(moved, "c"));
      assert.notEqual(old.exit_code, 0, "the moved directory is no writable root any more");
      assert.match(old.output, /Permission denied/);
      assert.ok(existsSync(path.join(root, "b")));
      assert.ok(!existsSync(path.join(moved, "c")));
    } finally {
      rmSync(root, { recursive: true, force: true });
      rmSync(moved, { recursive: true, force: true });
    }
  });

  test("a .git made after the first command, then replaced: each command finds the .git of its time read-only, and the moved one writable", async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-kept-ns-"));
    try {
      await using ex = await startExecutor();
      const sandbox: SandboxPolicy = { mode: "workspace-write", writable_roots: [root], network: false };
      const write = async (file: string) => {
        const r = await exec(ex, { command: ["sh", "-c", `echo x > '${file}' 2>&1`], cwd: root, env, sandbox });
        return r.exit_code === 0 ? "written" : r.output.includes("Read-only file system") ? "read-only" : r.output;
      };
      assert.equal(await write(path.join(root, "a")), "written");
      mkdirSync(path.join(root, ".git"));
      assert.equal(await write(path.join(root, ".git", "config")), "read-only");
      renameSync(path.join(root, ".git"), path.join(root, "old-git"));
      mkdirSync(path.join(root, ".git"));
      assert.equal(await write(path.join(root, ".git", "config")), "read-only", "the new .git");
      assert.equal(await write(path.join(root, "old-git", "config")), "written", "the moved one is plain workspace");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a mount made on the host after the kept namespace was made reaches the next command", {
    skip: hostMountsSkip,
  }, async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "relay-kept-mounts-"));
    const shared = path.join(root, "shared");
    const sub = path.join(shared, "sub");
    mkdirSync(path.join(root, ".git"));
    mkdirSync(sub, { recursive: true });
    const sh = (cmd: string, ...args: string[]) =>
      assert.equal(spawnSync(cmd, args).status, 0, `${cmd} ${args.join(" ")}`);
    // The host's own mounts may be private (nothing would propagate at all): a shared one of the test's own.
    sh("mount", "--bind", shared, shared);
    sh("mount", "--make-shared", shared);
    try {
      await using ex = await startExecutor();
      const sandbox: SandboxPolicy = { mode: "workspace-write", writable_roots: [root], network: false };
      const look = async () =>
        (
          await exec(ex, {
            command: ["sh", "-c", `cat '${sub}/marker' 2>/dev/null || echo missing`],
            cwd: root,
            env,
            sandbox,
          })
        ).output;
      assert.equal(await look(), "missing\n", "the kept namespace is made here");
      sh("mount", "-t", "tmpfs", "tmpfs", sub);
      writeFileSync(path.join(sub, "marker"), "here\n");
      assert.equal(await look(), "here\n", "the tmpfs mounted since reached the kept namespace");
    } finally {
      spawnSync("umount", ["-l", sub]);
      spawnSync("umount", ["-l", shared]);
      rmSync(root, { recursive: true, force: true });
    }
  });

  /** A sandboxed command that SIGSTOPs every process it can signal, over and over; its process id. */
  const startStorm = async (ex: ChildPeer): Promise<number> => {
    const hostile = await exec(ex, {
      command: ["sh", "-c", "echo hostile; while :; do kill -STOP -1 2>/dev/null; done"],
      cwd: ws,
      env,
      sandbox: policy(),
      yield_time_ms: 300,
    });
    assert.ok(hostile.process_id !== undefined, hostile.output);
    return hostile.process_id;
  };

  test("without Landlock's signal scope (ABI < 6) the init forks each command and kills a child stopped before its execve: a SIGSTOP storm cannot leave it stuck", async () => {
    await using ex = await startExecutor({ RELAY_SANDBOX_SIMULATE: "landlock-abi=5" });
    const first = await exec(ex, { command: ["sh", "-c", "echo ppid:$PPID"], cwd: ws, env, sandbox: policy() });
    assert.equal(first.output, "ppid:1\n", "forked by the init, not run by a helper");
    const hostile = await startStorm(ex);
    // B may be stopped by the storm before its execve (the init kills it at the deadline and
    // says so) or after it (then it is a running command like any other); either way it answers.
    const b = await exec(ex, { command: ["sh", "-c", "echo b"], cwd: ws, env, sandbox: policy(), yield_time_ms: 300 });
    const outcome =
      b.exit_code === 0
        ? "ran"
        : b.exit_code === 126
          ? "stopped before its execve"
          : b.process_id !== undefined
            ? "stopped after"
            : JSON.stringify(b);
    assert.ok(["ran", "stopped before its execve", "stopped after"].includes(outcome), outcome);
    if (b.exit_code === 126) assert.match(b.output, /stopped before it could start .*was killed/);
    await ex.peer.call(ExecutorMethods.terminate, { process_id: hostile });
    if (b.process_id !== undefined) await ex.peer.call(ExecutorMethods.terminate, { process_id: b.process_id });
    const c = await exec(ex, { command: ["sh", "-c", "echo c ppid:$PPID"], cwd: ws, env, sandbox: policy() });
    assert.equal(c.output, "c ppid:1\n", "the init still serves");
    assert.deepEqual(helpersOf(ex.pid!), [], "no helper was started");
  });

  test("without Landlock's signal scope, a new set of protected paths during a SIGSTOP storm: the init makes no namespace in a child of its own (the storm could stop it), and keeps serving", async () => {
    await using ex = await startExecutor({ RELAY_SANDBOX_SIMULATE: "landlock-abi=5" });
    const hostile = await startStorm(ex);
    // Each workspace has a .git of its own: a set of read-only paths the init has not seen.
    const others = Array.from({ length: 5 }, () => mkdtempSync(path.join(os.tmpdir(), "relay-storm-ws-")));
    try {
      for (const other of others) {
        mkdirSync(path.join(other, ".git"));
        const r = await exec(ex, {
          command: ["sh", "-c", "echo ran"],
          cwd: other,
          env,
          sandbox: { mode: "workspace-write", writable_roots: [other], network: false },
          yield_time_ms: 300,
        });
        // Answered either way: run, killed when stopped before its execve, or stopped after it.
        assert.ok(r.exit_code === 0 || r.exit_code === 126 || r.process_id !== undefined, JSON.stringify(r));
        if (r.process_id !== undefined) await ex.peer.call(ExecutorMethods.terminate, { process_id: r.process_id });
      }
    } finally {
      await ex.peer.call(ExecutorMethods.terminate, { process_id: hostile });
      for (const other of others) rmSync(other, { recursive: true, force: true });
    }
    const after = await exec(ex, { command: ["sh", "-c", "echo after ppid:$PPID"], cwd: ws, env, sandbox: policy() });
    assert.equal(after.output, "after ppid:1\n", "the init still serves");
  });

  test("a program not found or a cwd that is gone: the reason in the output, 127 or 126, and the init keeps serving", async () => {
    await using ex = await startExecutor();
    const missing = await exec(ex, { command: ["no-such-program-relay"], cwd: ws, env, sandbox: policy() });
    assert.equal(missing.exit_code, 127);
    assert.match(missing.output, /^relay sandbox: no-such-program-relay: command not found\n$/);
    const gone = path.join(ws, "gone");
    mkdirSync(gone);
    rmSync(gone, { recursive: true });
    for (const program of ["/bin/sh", "./relative-program"]) {
      const noCwd = await exec(ex, { command: [program, "-c", "echo ran"], cwd: gone, env, sandbox: policy() });
      assert.equal(noCwd.exit_code, 126, program);
      assert.match(noCwd.output, /^relay sandbox: cannot run in .*gone: it is not a directory \(or is gone\)\n$/);
    }
    const fine = await exec(ex, { command: ["sh", "-c", "echo still-serving"], cwd: ws, env, sandbox: policy() });
    assert.equal(fine.output, "still-serving\n");
  });

  test("a running command has its host pid: listed, terminated with its tree, its end reported", async () => {
    await using ex = await startExecutor();
    const { started, pid } = await startLongOne(ex, "sleep 1000 & echo started; wait");
    assert.match(
      readFileSync(`/proc/${pid}/cmdline`, "latin1"),
      /^sh\0-c\0sleep 1000/,
      "the listed pid is the command's, as the host sees it",
    );
    const sleeper = readdirSync("/proc")
      .map(Number)
      .find((p) => statField(p, 4) === String(pid));
    assert.ok(sleeper, "the background sleep is the shell's child");
    const ended = await ex.peer.call(ExecutorMethods.terminate, { process_id: started.process_id! });
    assert.deepEqual(ended, { ok: { running: true } });
    await waitFor(() => !isAlive(pid) && !isAlive(sleeper), "the command and its background child to end");
  });

  test("a request too big for the channel (a 400 KB environment) runs through a helper instead", async () => {
    await using ex = await startExecutor();
    const big = Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`RELAY_BIG_${i}`, String(i).repeat(100_000)]));
    const r = await exec(ex, {
      command: ["sh", "-c", 'echo "${#RELAY_BIG_0} ${#RELAY_BIG_3} ppid:$PPID"'],
      cwd: ws,
      env: { ...env, ...big },
      sandbox: policy(),
    });
    assert.equal(r.exit_code, 0);
    assert.equal(r.output, "100000 100000 ppid:0\n", "the whole environment, from a helper outside the namespace");
    const small = await exec(ex, { command: ["sh", "-c", "echo ppid:$PPID"], cwd: ws, env, sandbox: policy() });
    assert.equal(small.output, "ppid:1\n", "the next ordinary command goes to the init again");
  });

  test("a command the executor is done with is reaped; one it still holds stays a zombie until then", async () => {
    await using ex = await startExecutor();
    const done = await exec(ex, { command: ["sh", "-c", "echo $$"], cwd: ws, env, sandbox: policy() });
    assert.equal(done.exit_code, 0);
    // Ended within its exec call: released with its answer.
    const { started, pid } = await startLongOne(ex, "echo up; exec sleep 1000");
    const init = Number(statField(pid, 4));
    process.kill(pid, "SIGTERM");
    await waitFor(() => statField(pid, 3) === "Z", "the stored command to end and be held as a zombie");
    const listed = await ex.peer.call(ExecutorMethods.list, {});
    assert.ok("ok" in listed && listed.ok.processes.some((p) => p.pid === pid), "still the executor's, by this pid");
    const polled = await write(ex, started.process_id!, "");
    assert.equal(polled.exit_code, 143);
    await waitFor(() => !existsSync(`/proc/${pid}`), "the command to be reaped once the executor has its end");
    const zombies = readdirSync("/proc")
      .map(Number)
      .filter((p) => Number.isInteger(p) && statField(p, 4) === String(init) && statField(p, 3) === "Z");
    assert.deepEqual(zombies, [], "no zombie left in the container: the first command went with its answer");
  });

  test("an orphan left in the container is reaped when it ends, not left a zombie", async () => {
    await using ex = await startExecutor();
    const fifo = path.join(ws, `fifo-${process.pid}`);
    assert.equal(spawnSync("mkfifo", [fifo]).status, 0);
    const r = await exec(ex, {
      command: ["sh", "-c", `( exec cat ${fifo} >/dev/null & ) ; echo started`],
      cwd: ws,
      env,
      sandbox: policy(),
    });
    assert.equal(r.output, "started\n");
    const want = `cat\0${fifo}\0`;
    let orphan = 0;
    await waitFor(() => {
      orphan =
        readdirSync("/proc")
          .map(Number)
          .find((p) => Number.isInteger(p) && cmdlineOf(p) === want) ?? 0;
      return orphan > 0;
    }, "the orphan to show");
    assert.match(cmdlineOf(Number(statField(orphan, 4))) ?? "", /--container-init/, "the init adopted it");
    closeSync(openSync(fifo, "w"));
    await waitFor(() => !existsSync(`/proc/${orphan}`), "the orphan to be reaped");
  });

  test("output larger than a pipe's buffer arrives whole and in order", async () => {
    await using ex = await startExecutor();
    const r = await exec(ex, {
      command: ["seq", "1", "60000"],
      cwd: ws,
      env,
      sandbox: policy(),
      yield_time_ms: 20_000,
      max_output_tokens: 1_000_000,
    });
    assert.equal(r.exit_code, 0);
    const lines = r.output.trimEnd().split("\n");
    assert.equal(lines.length, 60000);
    assert.equal(lines[0], "1");
    assert.equal(lines[59999], "60000");
  });

  test("an init killed from outside: a running command ends as killed, and the next runs in a new container", async () => {
    await using ex = await startExecutor();
    const { started, pid } = await startLongOne(ex, "echo up; readlink /proc/self/ns/pid; exec sleep 1000");
    const init = Number(statField(pid, 4));
    assert.match(readFileSync(`/proc/${init}/cmdline`, "latin1"), /--container-init/);
    process.kill(init, "SIGKILL");
    const done = await write(ex, started.process_id!, "", { yield_time_ms: 20_000 });
    assert.equal(done.exit_code, 137, "killed with its namespace");
    const next = await exec(ex, {
      command: ["sh", "-c", "readlink /proc/self/ns/pid; echo ppid:$PPID"],
      cwd: ws,
      env,
      sandbox: policy(),
    });
    const [oldNs] = started.output.split("\n").slice(1);
    const [newNs, ppid] = next.output.trim().split("\n");
    assert.notEqual(newNs, oldNs, "a new container");
    assert.equal(ppid, "ppid:1", "whose init spawned it");
  });
});

/** An init of our own and its raw channel: requests the executor would never send. */
describe("the container's init refuses malformed requests and goes on serving", { skip }, () => {
  let native: Native;
  let started: StartedContainer;
  const replies: string[] = [];
  let ws = "";
  before(async () => {
    ws = mkdtempSync(path.join(os.tmpdir(), "relay-init-"));
    const n = await loadNative();
    assert.ok("ok" in n);
    native = n.ok;
    const s = await startContainer(relayArgv());
    assert.ok("ok" in s, JSON.stringify(s));
    started = s.ok;
    void (async () => {
      const stream = (
        globalThis as unknown as { Bun: { file(fd: number): { stream(): AsyncIterable<Uint8Array> } } }
      ).Bun.file(started.channel).stream();
      for await (const chunk of stream)
        replies.push(...Buffer.from(chunk).toString("utf8").split("\n").filter(Boolean));
    })();
  });
  after(() => {
    process.kill(started.ref.pid, "SIGKILL");
    rmSync(ws, { recursive: true, force: true });
  });

  const nextReply = async (): Promise<Record<string, unknown>> => {
    await waitFor(() => replies.length > 0, "a reply from the init");
    return JSON.parse(replies.shift()!) as Record<string, unknown>;
  };
  /** Sends `text` with the write end of a new pipe attached (or none); returns the read end. */
  const send = (text: string, attach = true): number | undefined => {
    const pipe = makePair(native, "pipe");
    assert.ok("ok" in pipe);
    const bytes = Buffer.from(text);
    const n = Number(
      native.symbols.relay_send(started.channel, native.ffi.ptr(bytes), bytes.length, attach ? pipe.ok[1] : -1, 0),
    );
    assert.equal(n, bytes.length);
    closeSync(pipe.ok[1]);
    if (attach) return pipe.ok[0];
    closeSync(pipe.ok[0]);
    return undefined;
  };
  const request = async (id: number, argv: string[]) => {
    const plan = await planBuiltin({ mode: "workspace-write", writable_roots: [ws], network: false }, env);
    assert.ok("ok" in plan);
    return JSON.stringify({ id, plan: { ...plan.ok, container: started.ref }, argv, env, cwd: ws });
  };

  test("it says it is ready first", async () => {
    assert.deepEqual(await nextReply(), { ready: true });
  });

  test("not JSON, no descriptor, a bad plan: each answered with the problem, nothing run", async () => {
    closeSync(send("{not json")!);
    const junk = await nextReply();
    assert.equal(junk.id, 0);
    assert.match(String(junk.problem), /spawn request is not valid JSON/);
    send(await request(7, ["sh", "-c", "echo ran"]), false);
    assert.deepEqual(await nextReply(), { id: 7, problem: "no output descriptor came with the request" });
    closeSync(send(JSON.stringify({ id: 8, plan: { abi: -1 }, argv: ["true"], env, cwd: ws }))!);
    const bad = await nextReply();
    assert.equal(bad.id, 8);
    assert.match(String(bad.problem), /plan: abi must be a non-negative integer/);
    closeSync(send(JSON.stringify({ id: 0, plan: {}, argv: [], env, cwd: ws }))!);
    assert.match(String((await nextReply()).problem), /id must be a positive integer/);
  });

  test("after them a good request runs: its pid on the host, its output, then its wait status", async () => {
    const out = send(await request(9, ["sh", "-c", "echo hello; exit 5"]))!;
    const spawned = await nextReply();
    assert.equal(spawned.id, 9);
    assert.equal(typeof spawned.pid, "number");
    const ended = await nextReply();
    assert.equal(ended.id, 9);
    assert.deepEqual(exitOfWaitStatus(ended.status as number), { code: 5, signal: null });
    const text = readFileSync(`/proc/self/fd/${out}`, "utf8");
    closeSync(out);
    assert.equal(text, "hello\n");
  });

  test("a command killed by a signal reports it", async () => {
    const out = send(await request(10, ["sh", "-c", "kill -TERM $$"]))!;
    assert.equal((await nextReply()).id, 10);
    const ended = await nextReply();
    closeSync(out);
    assert.deepEqual(exitOfWaitStatus(ended.status as number), { code: 143, signal: "SIGTERM" });
  });

  test("an ended command stays a zombie, its pid taken, until released; an orphan beside it is reaped", async () => {
    // The command leaves an orphan that outlives it until the fifo opens, so its SIGCHLD comes while the command is held.
    const fifo = path.join(ws, `held-${process.pid}`);
    assert.equal(spawnSync("mkfifo", [fifo]).status, 0);
    const out = send(await request(11, ["sh", "-c", `( exec cat ${fifo} >/dev/null & ) ; exit 3`]))!;
    const pid = (await nextReply()).pid as number;
    const ended = await nextReply();
    closeSync(out);
    assert.deepEqual({ id: ended.id, ...exitOfWaitStatus(ended.status as number) }, { id: 11, code: 3, signal: null });
    assert.equal(statField(pid, 3), "Z", "reported, not reaped: its pid cannot go to another process");
    let orphan = 0;
    await waitFor(() => {
      orphan =
        readdirSync("/proc")
          .map(Number)
          .find((p) => Number.isInteger(p) && cmdlineOf(p) === `cat\0${fifo}\0`) ?? 0;
      return orphan > 0 && statField(orphan, 4) === String(started.ref.pid);
    }, "the orphan to show, adopted by the init");
    closeSync(openSync(fifo, "w"));
    await waitFor(() => !existsSync(`/proc/${orphan}`), "the orphan to be reaped when it ends");
    assert.equal(statField(pid, 3), "Z", "the command is still held after the orphan's SIGCHLD");
    send(JSON.stringify({ release: [11] }), false);
    await waitFor(() => !existsSync(`/proc/${pid}`), "the released command to be reaped");
  });

  test("a release of a running command reaps it as it ends; malformed and unknown releases change nothing", async () => {
    send('{"release":"all"}', false);
    send(JSON.stringify({ release: [999] }), false);
    const out = send(await request(12, ["sleep", "1000"]))!;
    const pid = (await nextReply()).pid as number;
    send(JSON.stringify({ release: [12] }), false);
    assert.equal(statField(pid, 3) === "Z", false, "still running");
    process.kill(pid, "SIGKILL");
    assert.deepEqual(exitOfWaitStatus((await nextReply()).status as number), { code: 137, signal: "SIGKILL" });
    closeSync(out);
    await waitFor(() => !existsSync(`/proc/${pid}`), "a command released early to be reaped as it ends");
    assert.equal(replies.length, 0, "no reply to the releases");
  });

  test("releases in a spawn request are taken once its command started; a malformed one refuses the request", async () => {
    const first = send(await request(13, ["true"]))!;
    const held = (await nextReply()).pid as number;
    assert.equal((await nextReply()).id, 13);
    closeSync(first);
    assert.equal(statField(held, 3), "Z", "held until released");
    const withRelease = JSON.parse(await request(14, ["sh", "-c", "echo second"])) as Record<string, unknown>;
    const second = send(JSON.stringify({ ...withRelease, release: [13] }))!;
    const secondPid = (await nextReply()).pid as number;
    await waitFor(() => !existsSync(`/proc/${held}`), "the command released with the next request to be reaped");
    assert.equal((await nextReply()).id, 14);
    assert.equal(readFileSync(`/proc/self/fd/${second}`, "utf8"), "second\n");
    closeSync(second);
    const bad = JSON.parse(await request(15, ["sh", "-c", "echo ran"])) as Record<string, unknown>;
    const refused = send(JSON.stringify({ ...bad, release: ["14"] }))!;
    const answer = await nextReply();
    assert.deepEqual(answer.id, 15);
    assert.match(String(answer.problem), /release must be an array of positive integers/);
    assert.equal(readFileSync(`/proc/self/fd/${refused}`, "utf8"), "", "nothing ran");
    closeSync(refused);
    // Released and reaped before the init is killed: a message it never read would reset the channel.
    send(JSON.stringify({ release: [14] }), false);
    await waitFor(() => !existsSync(`/proc/${secondPid}`), "the second command to be reaped");
  });
});

describe("the init's fork where signals are not scoped (Landlock ABI < 6)", { skip }, () => {
  test("a child stopped before its execve is killed at once and reported as stopped, long before the deadline", async () => {
    const n = await loadNative();
    assert.ok("ok" in n);
    const ws = mkdtempSync(path.join(os.tmpdir(), "relay-fork-stopped-"));
    // Planned first: the sandbox probe forks a child of its own, which the stopper would stop too.
    const built = await planBuiltin({ mode: "workspace-write", writable_roots: [ws], network: false }, env);
    assert.ok("ok" in built);
    // Another thread SIGSTOPs every forked child of this process that has not exec'd yet.
    const stopper = new Worker(new URL("../support/fixtures/stopper-worker.ts", import.meta.url).href);
    const messages: unknown[] = [];
    stopper.onmessage = (e: MessageEvent) => void messages.push(e.data);
    try {
      await waitFor(() => messages.includes("ready"), "the stopper thread to run");
      // Many read-only binds give the stopper time to find the child before its execve.
      const plan = {
        ...built.ok,
        scoped: built.ok.scoped & ~Scope.SIGNAL,
        readOnly: Array.from({ length: 2000 }, () => ws),
      };
      const pipe = makePair(n.ok, "pipe");
      assert.ok("ok" in pipe);
      const hostProc = openSync("/proc", "r");
      try {
        // On a loaded machine a child may reach its execve before the stopper sees it: /bin/true
        // then just ran, and the next try gives the stopper another chance.
        for (let attempt = 1; ; attempt++) {
          const started = performance.now();
          const r = spawnChild(
            n.ok,
            plan,
            { file: "/bin/true", argv: ["true"], env },
            { outFd: pipe.ok[1], cwd: ws, hostProcFd: hostProc },
          );
          if ("pid" in r && attempt < 20) {
            closeSync(r.pidfd);
            continue;
          }
          assert.ok("failure" in r, `the stopper caught no child in 20 tries: ${JSON.stringify(r)}`);
          assert.equal(decodeNativeError(r.failure).stage, Stage.Stopped);
          // Not a timed assertion of speed: the deadline is 30 s, and a stop is seen within a poll slice.
          assert.ok(
            performance.now() - started < SPAWN_DEADLINE_MS / 2,
            "killed when seen stopped, not at the deadline",
          );
          break;
        }
      } finally {
        for (const fd of [hostProc, ...pipe.ok]) closeSync(fd);
      }
    } finally {
      stopper.postMessage("done");
      await waitFor(() => messages.length > 1, "the stopper thread to finish");
      stopper.terminate();
      rmSync(ws, { recursive: true, force: true });
    }
  });

  test("a child that has not reached its execve by the deadline is killed and reported", async () => {
    const n = await loadNative();
    assert.ok("ok" in n);
    const ws = mkdtempSync(path.join(os.tmpdir(), "relay-fork-deadline-"));
    try {
      const built = await planBuiltin({ mode: "workspace-write", writable_roots: [ws], network: false }, env);
      assert.ok("ok" in built);
      // Without the signal scope, and with 2000 read-only binds to make before the execve: no child gets there in 0 ms, even on a loaded machine.
      const plan = {
        ...built.ok,
        scoped: built.ok.scoped & ~Scope.SIGNAL,
        readOnly: Array.from({ length: 2000 }, () => ws),
      };
      assert.equal(spawnMode(plan), "fork");
      const pipe = makePair(n.ok, "pipe");
      assert.ok("ok" in pipe);
      const hostProc = openSync("/proc", "r");
      // Zombie children of this process started from now on (an earlier test's init may die meanwhile), in clock ticks since boot.
      const since = Math.floor(Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 100) - 1;
      const zombies = () =>
        readdirSync("/proc")
          .map(Number)
          .filter(
            (p) =>
              Number.isInteger(p) &&
              statField(p, 4) === String(process.pid) &&
              statField(p, 3) === "Z" &&
              Number(statField(p, 22)) >= since,
          );
      try {
        const r = spawnChild(
          n.ok,
          plan,
          { file: "/bin/true", argv: ["true"], env },
          { outFd: pipe.ok[1], cwd: ws, hostProcFd: hostProc, deadlineMs: 0 },
        );
        assert.ok("failure" in r, `the child started: ${JSON.stringify(r)}`);
        assert.deepEqual(decodeNativeError(r.failure), { stage: Stage.Deadline, errno: 110 });
      } finally {
        for (const fd of [hostProc, ...pipe.ok]) closeSync(fd);
      }
      assert.deepEqual(zombies(), [], "the killed child was reaped");
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
