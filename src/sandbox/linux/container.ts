/**
 * The executor's container: one user + pid + mount namespace per executor, whose init is
 * cloned by the executor with PR_SET_PDEATHSIG = SIGKILL. Every sandboxed command joins it
 * (its helper setns()es in and spawns the command there), so however a command hides (double
 * fork, setsid, a cleared environment), it dies when the executor dies: the kernel kills
 * every process of a pid namespace when its init ends. Background processes still outlive
 * the command that started them, as they do outside a sandbox, until the executor ends.
 *
 * The executor starts the init (startContainer) with a channel to it; the init forks each
 * sandboxed command and reaps orphans (init-loop.ts; the executor's side is spawner.ts). Where
 * the init cannot take a command, a helper joins and spawns it (joinContainer, spawnAndWait).
 */
import { closeSync, readlinkSync } from "node:fs";
import { readStartTime } from "../../util/proc-stat.ts";
import { err, ok, type Result } from "../../util/result.ts";
import { resolveProgram } from "../../util/which.ts";
import { type ContainerFds, loadNative, makePair, startContainerInit } from "./confine-cc.ts";
import { SANDBOX_EXEC_ARG, SINGLE_THREAD_ENV } from "./helper-arg.ts";
import { CArgs, envList, type Libc, loadLibc } from "./libc.ts";
import type { ContainerRef, ExecTarget } from "./plan-schema.ts";
import { type ConfineFailure, decodeNativeError, describeFailure, Stage } from "./stages.ts";
import { simulated } from "./support.ts";

export type { ContainerRef } from "./plan-schema.ts";

/** `relay __sandbox-exec --container-init`: the container's pid 1 after its setup in C. */
export const CONTAINER_INIT_FLAG = "--container-init";

/** The namespaces a helper joins (openContainer opens them in this order). */
const JOINED_NAMESPACES = ["user", "mnt", "pid"] as const;

/**
 * The init's runtime settings: few threads (SINGLE_THREAD_ENV), and no optimizing JIT. With
 * JSC's concurrent JIT off, every compile runs on the init's one thread, in some command's
 * path, and the optimizing tier's compiles of the few small functions it runs per command cost
 * more than they win back: with the baseline JIT alone, a fresh executor's commands 4-25 took
 * 4.9 ms p50 against 5.6-5.8, and a warm one's 3.6-3.7 against 3.8-4.0 (docs/performance.md).
 */
const INIT_ENV: Readonly<Record<string, string>> = { ...SINGLE_THREAD_ENV, BUN_JSC_useDFGJIT: "0" };

/**
 * Whether the container can still be joined: its init is the same process and not exiting. An
 * init that is being killed drops its mount namespace before its pid namespace's processes are
 * killed, and long before it is reaped, while its pid namespace link stays readable until then:
 * so every namespace a helper opens is checked, not the pid one alone (which let a command try
 * to join a dying container and fail with ENOENT).
 */
export function containerAlive(ref: ContainerRef): boolean {
  if (readStartTime(ref.pid) !== ref.start) return false;
  try {
    for (const ns of JOINED_NAMESPACES) readlinkSync(`/proc/${ref.pid}/ns/${ns}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Collects the exit of a container init that died (it was cloned in C, so the runtime does not
 * know to wait for it and it would stay a zombie).
 */
export async function reapContainer(pid: number): Promise<boolean> {
  const loaded = await loadLibc();
  if ("error" in loaded) return true;
  const r = loaded.ok.libc.waitpid(pid, new CArgs(loaded.ok.ffi).bytes(new Int32Array(1)), 1 /* WNOHANG */);
  // 0: still exiting, try again later; -1 (ECHILD): nothing left to collect.
  return r !== 0;
}

const FIX =
  "so sandboxed commands are tracked by their environment marker only, and one that clears its environment and calls setsid can outlive the executor. " +
  "Full containment needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0) " +
  "and a /proc that may be mounted again (inside a container runtime that masks /proc, it may not)";

/** A started container: what commands join it by, and the executor's end of its init's channel. */
export interface StartedContainer {
  ref: ContainerRef;
  channel: number;
}

/** Starts the container's init; the reference commands join it by and its channel, or why there can be none here. */
export async function startContainer(self: readonly string[]): Promise<Result<StartedContainer>> {
  if (process.platform !== "linux")
    return err("no_container", `process containment uses Linux namespaces, not available on ${process.platform}`);
  if (simulated().noUserns)
    return err("no_container", `user namespaces are off (simulated by RELAY_SANDBOX_SIMULATE), ${FIX}`);
  const native = await loadNative();
  if ("error" in native) return err("no_container", `${native.error.message}, ${FIX}`);
  const exe = resolveProgram(self[0] ?? "", process.env.PATH, process.cwd());
  if ("error" in exe) return err("no_container", `${exe.error.message}, ${FIX}`);
  const argv = [exe.ok, ...self.slice(1), SANDBOX_EXEC_ARG, CONTAINER_INIT_FLAG];
  const pair = makePair(native.ok, "socket");
  if ("error" in pair)
    return err("no_container", `the executor's container could not be made (${pair.error.message}), ${FIX}`);
  const [mine, its] = pair.ok;
  // The init runs no user code and needs nothing of the executor's environment (its secrets included).
  const pid = startContainerInit(native.ok, argv, { PATH: process.env.PATH ?? "/usr/bin:/bin", ...INIT_ENV }, its);
  closeSync(its);
  const start = pid < 0 ? undefined : readStartTime(pid);
  if (start === undefined) closeSync(mine);
  if (pid < 0)
    return err(
      "no_container",
      `the executor's container could not be made (${describeFailure(decodeNativeError(pid))}), ${FIX}`,
    );
  if (start === undefined) return err("no_container", `the executor's container ended as it started, ${FIX}`);
  return ok({ ref: { pid, start }, channel: mine });
}

const CLONE_NEWNS = 0x00020000;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWPID = 0x20000000;
const O_RDONLY_CLOEXEC = 0o2000000;
const ESRCH = 3;
const EINVAL = 22;

/**
 * The container's user, mount and pid namespace files, opened for joining. Checked after
 * opening: a pid reused since the executor started the container has a later start time.
 */
export function openContainer(libc: Libc, c: CArgs, ref: ContainerRef): ContainerFds {
  const fds: number[] = [];
  const fail = (errno: number): never => {
    for (const fd of fds) libc.close(fd);
    throw { stage: Stage.JoinContainer, errno } satisfies ConfineFailure;
  };
  for (const ns of JOINED_NAMESPACES) {
    const fd = libc.open(c.str(`/proc/${ref.pid}/ns/${ns}`), O_RDONLY_CLOEXEC, 0);
    if (fd < 0) fail(libc.errno());
    fds.push(fd);
  }
  if (readStartTime(ref.pid) !== ref.start) fail(ESRCH);
  const [user, mnt, pid] = fds as [number, number, number];
  return { user, mnt, pid };
}

export function closeContainer(libc: Libc, fds: ContainerFds): void {
  for (const fd of [fds.user, fds.mnt, fds.pid]) libc.close(fd);
}

/**
 * Moves this helper into the container. Joining a user namespace needs a single-threaded
 * process: a threaded helper gets a failure marked `threaded` and takes the forking path
 * (confine.c joins in its child). The pid namespace applies to children only, so the command
 * must then be spawned, not exec'd; joining the mount namespace moves the cwd to its root,
 * so the cwd is set again.
 */
export function joinContainer(libc: Libc, c: CArgs, ref: ContainerRef): void {
  const cwd = process.cwd();
  const fds = openContainer(libc, c, ref);
  const fail = (errno: number, threaded = false): never => {
    closeContainer(libc, fds);
    throw { stage: Stage.JoinContainer, errno, ...(threaded ? { threaded } : {}) } satisfies ConfineFailure;
  };
  if (libc.setns(fds.user, CLONE_NEWUSER) < 0) {
    const errno = libc.errno();
    fail(errno, errno === EINVAL);
  }
  if (libc.setns(fds.mnt, CLONE_NEWNS) < 0 || libc.setns(fds.pid, CLONE_NEWPID) < 0) fail(libc.errno());
  closeContainer(libc, fds);
  process.chdir(cwd);
}

const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const SIG_UNBLOCK = 1;
const RLIMIT_CORE = 4;
const EINTR = 4;
/** glibc's posix_spawnattr_t is 336 bytes and its sigset_t 128; room for any libc. */
const ATTR_BYTES = 1024;
const SIGSET_BYTES = 256;
/** The terminal and killTree signal the command's whole group; the helper waits for its end. */
const HELPER_IGNORES = [1, 2, 3, 15];

/**
 * Spawns the confined command (inheriting this helper's confinement, stdio, group and
 * terminal; every signal back at its default), waits for it and ends the same way: with its
 * exit code, or killed by the same signal. Returns only if the spawn failed.
 */
export function spawnAndWait(libc: Libc, c: CArgs, target: ExecTarget): ConfineFailure {
  const attr = new Uint8Array(ATTR_BYTES);
  // Every bit set by hand: sigfillset leaves out libc's own signals (32, 33), and glibc's
  // posix_spawn would then leave them ignored in the command.
  const all = new Uint8Array(SIGSET_BYTES).fill(0xff);
  const none = new Uint8Array(SIGSET_BYTES);
  libc.spawnattrInit(c.bytes(attr));
  libc.sigemptyset(c.bytes(none));
  libc.spawnattrSetsigdefault(c.bytes(attr), c.bytes(all));
  libc.spawnattrSetsigmask(c.bytes(attr), c.bytes(none));
  libc.spawnattrSetflags(c.bytes(attr), POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  for (const sig of HELPER_IGNORES) libc.ignoreSignal(sig);
  const pid = new Int32Array(1);
  const r = libc.posixSpawn(
    c.bytes(pid),
    c.str(target.file),
    null,
    c.bytes(attr),
    c.strArray(target.argv),
    c.strArray(envList(target.env)),
  );
  if (r !== 0) return { stage: Stage.Execve, errno: r };
  const status = new Int32Array(1);
  while (libc.waitpid(pid[0]!, c.bytes(status), 0) < 0) {
    if (libc.errno() !== EINTR) return { stage: Stage.Spawn, errno: libc.errno() };
  }
  return endLike(libc, c, status[0]!);
}

/** Exits as a process with wait status `status` did. */
function endLike(libc: Libc, c: CArgs, status: number): never {
  const sig = status & 0x7f;
  if (sig === 0) process.exit((status >> 8) & 0xff);
  // No core file for the helper: the command's own was already written, if any.
  libc.setrlimit(RLIMIT_CORE, c.bytes(new BigUint64Array([0n, 0n])));
  libc.defaultSignal(sig);
  const set = new Uint8Array(SIGSET_BYTES);
  libc.sigemptyset(c.bytes(set));
  libc.sigaddset(c.bytes(set), sig);
  libc.sigprocmask(SIG_UNBLOCK, c.bytes(set), null);
  libc.kill(libc.getpid(), sig);
  process.exit(128 + sig);
}
