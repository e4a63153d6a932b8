/**
 * The container's pid 1 (`relay __sandbox-exec --container-init`). It forks every sandboxed
 * command the executor sends it, so a command needs no helper process of its own, and it
 * reaps every orphan of the namespace.
 *
 * The executor's channel is fd 3, one end of a SOCK_SEQPACKET pair (container.ts). A request is
 * one message: a spawn request as JSON (plan-guard.ts) with the command's output pipe attached.
 * Replies are one JSON line per message, `spawned` in the order of the requests:
 *   {"ready":true} | {"ready":false,"reason":…}   once, first
 *   {"id":N,"pid":P}                             running; P is its pid on the host
 *   {"id":N,"exit":C}                            not run: the reason went to its output
 *   {"id":N,"problem":…}                         not run: a malformed request (a bug)
 *   {"id":N,"status":S}                          ended, with its wait status
 * A command that ended stays a zombie until the executor releases it, in a spawn request's
 * `release` (taken once that command has started) or on its own as {"release":[N, …]} (no
 * descriptor): until then its pid, which is its process group's id too, cannot be given to
 * another process, so the executor's kills of it can reach nothing else. Orphans are reaped
 * as they end.
 * Signals cannot end the init: it catches every one it may be sent with a handler that does
 * nothing (caught rather than ignored, so that a command's execve resets them to their
 * defaults), and from inside its namespace pid 1 gets no other; SIGKILL from the executor's
 * side, the executor's death, or the channel's end ends it, and with it every process in the
 * namespace.
 */
import { closeSync, readdirSync, statSync, writeSync } from "node:fs";
import { procStatFields } from "../../util/proc-stat.ts";
import { resolveProgram } from "../../util/which.ts";
import { loadNative, type Native, SPAWN_DEADLINE_MS, spawnChild, spawnMode } from "./confine-cc.ts";
import { KeptConfinement } from "./kept-confinement.ts";
import { CArgs, type Libc, loadLibc } from "./libc.ts";
import { parseRelease, parseSpawnRequest, SPAWN_READ_BYTES, type SpawnRequest } from "./plan-guard.ts";
import { decodeNativeError, describeFailure, Stage } from "./stages.ts";

/** The init's descriptors, as confine.c's container_child leaves them. */
const CHANNEL_FD = 3;
const HOST_PROC_FD = 4;
const SIGCHLD = 17;
const WNOHANG = 1;
const WEXITED = 4;
const WNOWAIT = 0x01000000;
/** siginfo_t's si_code for a child's end: exited, killed, killed with a core dump. */
const CLD_EXITED = 1;
const CLD_KILLED = 2;
const CLD_DUMPED = 3;
/** What a command whose end cannot be read is reported as: gone, as if SIGKILLed. */
const LOST = 9;
/** Only bounds a missed wake-up: a request, a command's end or SIGCHLD ends the wait at once. */
const WAIT_MS = 60_000;
const UNWATCHED_POLL_MS = 20;
/**
 * Orphans are looked for (a walk of /proc) once the init has been idle this long after a
 * SIGCHLD, not at every command's end (each sends one): while commands run back to back the
 * walk stays off their path, at most once per ORPHAN_SCAN_MAX_DELAY_MS.
 */
const ORPHAN_SCAN_IDLE_MS = 10;
const ORPHAN_SCAN_MAX_DELAY_MS = 1_000;
/** relay_recv's answer for a message cut short. */
const TRUNCATED = -1000;
/** Shell conventions: 126 found but cannot run, 127 not found. */
const EXIT_CANNOT_RUN = 126;
const EXIT_NOT_FOUND = 127;

class InitLoop {
  /** Command pids in the namespace → their request ids and pidfds. */
  private readonly running = new Map<number, { id: number; pidfd: number }>();
  /** Commands that ended and were reported, kept as zombies until released: id → pid. */
  private readonly held = new Map<number, number>();
  /** Ids released while their command still ran: reaped as soon as it ends. */
  private readonly releasedEarly = new Set<number>();
  /** A siginfo_t, as 32-bit fields: si_code at 2, si_pid at 4, si_status at 6. */
  private readonly info = new Int32Array(32);
  /** Not zeroed: pages a message never reached are never touched. */
  private readonly buf = Buffer.allocUnsafeSlow(SPAWN_READ_BYTES);
  private readonly receivedFd = new Int32Array(1);
  /** When a SIGCHLD came that no walk for orphans has followed yet. */
  private orphansSince: number | undefined;
  private readonly status = new Int32Array(1);
  private readonly kept: KeptConfinement;
  constructor(
    private readonly native: Native,
    private readonly libc: Libc,
  ) {
    this.kept = new KeptConfinement(native);
  }

  reply(message: object): void {
    const bytes = Buffer.from(`${JSON.stringify(message)}\n`);
    // Blocking: the executor reads its end all the time, and a reply must not be lost.
    this.native.symbols.relay_send(CHANNEL_FD, this.native.ffi.ptr(bytes), bytes.length, -1, 1);
  }

  /** Reports every command that ended; each stays a zombie until the executor releases it. */
  reportEnded(): void {
    for (const [pid, command] of this.running) {
      const status = this.endedStatus(pid);
      if (status === undefined) continue;
      this.running.delete(pid);
      if (command.pidfd >= 0) this.libc.close(command.pidfd);
      if (this.releasedEarly.delete(command.id)) this.reap(pid);
      else this.held.set(command.id, pid);
      this.reply({ id: command.id, status });
    }
  }

  /** Command `pid`'s wait status once it has ended, read without reaping it; undefined while it runs. */
  private endedStatus(pid: number): number | undefined {
    this.info.fill(0);
    if (this.libc.waitid(pid, this.native.ffi.ptr(this.info), WEXITED | WNOHANG | WNOWAIT) !== 0) return LOST;
    if (this.info[4] === 0) return undefined;
    const [code, status] = [this.info[2], this.info[6]! & 0xff];
    if (code === CLD_EXITED) return status << 8;
    if (code === CLD_KILLED) return status & 0x7f;
    if (code === CLD_DUMPED) return (status & 0x7f) | 0x80;
    return undefined;
  }

  private reap(pid: number): void {
    this.libc.waitpid(pid, this.native.ffi.ptr(this.status), WNOHANG);
  }

  /** Reaps the orphans that ended: zombies whose parent is this init and that are no command. */
  reapOrphans(): void {
    let names: string[];
    try {
      names = readdirSync("/proc");
    } catch {
      return;
    }
    const held = new Set(this.held.values());
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid <= 1 || this.running.has(pid) || held.has(pid)) continue;
      const stat = procStatFields(pid);
      if (stat?.[0] === "Z" && stat[1] === "1") this.reap(pid);
    }
  }

  /** The executor is done with these commands: their zombies go, or go as soon as they end. */
  private release(ids: number[]): void {
    for (const id of ids) {
      const pid = this.held.get(id);
      if (pid !== undefined) {
        this.held.delete(id);
        this.reap(pid);
      } else if ([...this.running.values()].some((c) => c.id === id)) this.releasedEarly.add(id);
    }
  }

  /** Waits for a request, a command's end or a SIGCHLD; which of them came (idle: none, the wait timed out). */
  private wait(): { request: boolean; sigchld: boolean; idle: boolean } {
    const pidfds = [...this.running.values()].map((r) => r.pidfd);
    const fds = Int32Array.from([...pidfds, -1]);
    const ready = new Uint8Array(pidfds.length + 2);
    // A command without a pidfd (pidfd_open failed) is looked for often instead.
    const timeout = Math.min(
      pidfds.some((fd) => fd < 0) ? UNWATCHED_POLL_MS : WAIT_MS,
      this.orphansSince === undefined ? WAIT_MS : ORPHAN_SCAN_IDLE_MS,
    );
    const r = this.native.symbols.relay_init_wait(
      CHANNEL_FD,
      this.native.ffi.ptr(fds),
      pidfds.length,
      this.native.ffi.ptr(ready),
      timeout,
    );
    if (r < 0) process.exit(1);
    // A timeout also looks for orphans: it only bounds a missed wake-up.
    return { request: ready[0] === 1, sigchld: r === 0 || ready[pidfds.length + 1] === 1, idle: r === 0 };
  }

  /** Serves one request; false once the executor's end is closed or broken. */
  serveOne(): boolean {
    const n = Number(
      this.native.symbols.relay_recv(
        CHANNEL_FD,
        this.native.ffi.ptr(this.buf),
        this.buf.length,
        this.native.ffi.ptr(this.receivedFd),
      ),
    );
    if (n === TRUNCATED) {
      this.reply({ id: 0, problem: `the request was over ${SPAWN_READ_BYTES} bytes` });
      return true;
    }
    // End of file, or an error that would repeat on every try.
    if (n <= 0) return false;
    const outFd = this.receivedFd[0]!;
    const text = this.buf.toString("utf8", 0, n);
    const released = outFd < 0 ? parseRelease(text) : undefined;
    if (released) {
      this.release(released);
      return true;
    }
    const req = parseSpawnRequest(text);
    if ("problem" in req || outFd < 0) {
      if (outFd >= 0) closeSync(outFd);
      this.reply({
        id: "problem" in req ? (req.id ?? 0) : req.ok.id,
        problem: "problem" in req ? req.problem : "no output descriptor came with the request",
      });
      return true;
    }
    try {
      this.start(req.ok, outFd);
    } finally {
      closeSync(outFd);
    }
    if (req.ok.release) this.release(req.ok.release);
    return true;
  }

  /** Forks the command, or writes why it cannot run to its output. */
  private start(req: SpawnRequest, outFd: number): void {
    const argv0 = req.argv[0]!;
    // The executor sends only what the init can start (spawner.ts takes): vfork would hang on this one.
    if (spawnMode(req.plan) === undefined)
      return this.reply({
        id: req.id,
        problem: "the plan has no Landlock signal scope and this CPU has no known clone number: a helper must start it",
      });
    const notRun = (message: string, exit: number) => {
      writeQuietly(outFd, `relay sandbox: ${message}\n`);
      this.reply({ id: req.id, exit });
    };
    // The cwd first, as a shell would: a relative program is looked for in it.
    if (!isDirectory(req.cwd))
      return notRun(`cannot run in ${req.cwd}: it is not a directory (or is gone)`, EXIT_CANNOT_RUN);
    const file = resolveProgram(argv0, req.env.PATH, req.cwd);
    if ("error" in file) return notRun(file.error.message, EXIT_NOT_FOUND);
    const r = spawnChild(
      this.native,
      req.plan,
      { file: file.ok, argv: req.argv, env: req.env },
      { outFd, cwd: req.cwd, hostProcFd: HOST_PROC_FD, kept: this.kept.for(req.plan) },
    );
    if ("pid" in r) {
      this.running.set(r.pid, { id: req.id, pidfd: r.pidfd });
      return this.reply({ id: req.id, pid: r.hostPid });
    }
    const failure = decodeNativeError(r.failure);
    const text = describeFailure(failure);
    if (failure.stage === Stage.Execve)
      return notRun(`${argv0}: cannot run: ${text}`, failure.errno === 2 ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
    if (failure.stage === Stage.Cwd) return notRun(`cannot run in ${req.cwd}: ${text}`, EXIT_CANNOT_RUN);
    if (failure.stage === Stage.Stopped)
      return notRun(
        `${argv0}: not run: it was stopped before it could start (another command's SIGSTOP?) and was killed`,
        EXIT_CANNOT_RUN,
      );
    if (failure.stage === Stage.Deadline)
      return notRun(
        `${argv0}: not run: it had not started after ${SPAWN_DEADLINE_MS / 1000} s and was killed`,
        EXIT_CANNOT_RUN,
      );
    notRun(`could not apply the sandbox (${text}); the command was not run`, EXIT_CANNOT_RUN);
  }

  run(): never {
    for (;;) {
      const woke = this.wait();
      this.reportEnded();
      if (woke.request && !this.serveOne()) process.exit(0);
      if (woke.sigchld) this.orphansSince ??= Date.now();
      if (
        this.orphansSince !== undefined &&
        (woke.idle || Date.now() - this.orphansSince >= ORPHAN_SCAN_MAX_DELAY_MS)
      ) {
        this.orphansSince = undefined;
        this.reapOrphans();
      }
    }
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function writeQuietly(fd: number, text: string): void {
  try {
    writeSync(fd, text);
  } catch {
    // the executor stopped reading: nobody is left to tell
  }
}

function ignoreSignals(libc: Libc): void {
  for (let sig = 1; sig <= 31; sig++) if (sig !== 9 && sig !== 19 && sig !== SIGCHLD) libc.ignoreSignal(sig);
}

export async function containerInitMain(): Promise<never> {
  const loaded = await loadLibc();
  if ("error" in loaded) process.exit(1);
  ignoreSignals(loaded.ok.libc);
  const native = await loadNative();
  // Caught rather than ignored, so a command's execve resets them (confine.c relay_init_signals).
  if ("ok" in native && native.ok.symbols.relay_init_signals() !== 0) ignoreSignals(loaded.ok.libc);
  const loop = "ok" in native ? new InitLoop(native.ok, loaded.ok.libc) : undefined;
  if (!loop) return reapOnly(loaded.ok.libc, new CArgs(loaded.ok.ffi), "error" in native ? native.error.message : "");
  loop.reply({ ready: true });
  return loop.run();
}

/**
 * Without confine.c (it did not compile here) the init cannot spawn: it says so, and only
 * reaps, as the container's init did before it spawned; commands then join through helpers.
 */
function reapOnly(libc: Libc, c: CArgs, reason: string): never {
  const bytes = Buffer.from(`${JSON.stringify({ ready: false, reason })}\n`);
  libc.write(CHANNEL_FD, c.bytes(bytes), bytes.length);
  const set = c.bytes(new Uint8Array(256));
  libc.sigemptyset(set);
  libc.sigaddset(set, SIGCHLD);
  libc.sigprocmask(0 /* SIG_BLOCK */, set, null);
  const status = c.bytes(new Int32Array(1));
  const timeout = c.bytes(new BigInt64Array([60n, 0n]));
  for (;;) {
    while (libc.waitpid(-1, status, WNOHANG) > 0);
    libc.sigtimedwait(set, null, timeout);
  }
}
