/**
 * The built-in sandbox applied in place, from JavaScript through libc: no compiler and no
 * extra process, so the command keeps the helper's pid and its exit status is the command's.
 * Protecting `.git` needs a user + mount namespace, and unshare(CLONE_NEWUSER) refuses a
 * threaded process: the helper is started single-threaded (BUN_JSC_useConcurrentJIT=0) and
 * reports "threaded" when that did not hold, so the caller can take the forking C path.
 */

import { joinContainer, spawnAndWait } from "./container.ts";
import { rulesetAttrSize } from "./landlock-plan.ts";
import { CArgs, envList, type Ffi, type Libc } from "./libc.ts";
import type { ConfinePlan, ExecTarget } from "./plan-schema.ts";
import { encodeFilter, networkFilter } from "./seccomp-bpf.ts";
import { type ConfineFailure, Stage } from "./stages.ts";

const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWUSER = 0x10000000;
const MS_BIND = 4096;
const MS_REC = 16384;
const MS_PRIVATE = 1 << 18;
const AT_FDCWD = -100;
const AT_RECURSIVE = 0x8000;
const MOUNT_ATTR_RDONLY = 1;
const O_CLOEXEC = 0o2000000;
const O_PATH_CLOEXEC = 0o10000000 | O_CLOEXEC;
const O_WRONLY_CLOEXEC = 1 | O_CLOEXEC;
const EINVAL = 22;
const ENOENT = 2;
const EACCES = 13;
const ENOTDIR = 20;
const SYS = { mountSetattr: 442, landlockCreate: 444, landlockAdd: 445, landlockRestrict: 446 } as const;

class Step {
  constructor(
    readonly libc: Libc,
    readonly c: CArgs,
  ) {}
  check(stage: number, r: number): void {
    if (r < 0) throw { stage, errno: this.libc.errno() } satisfies ConfineFailure;
  }
}

/** One write to a proc file, opened O_WRONLY only (the id maps refuse O_CREAT and O_TRUNC). */
function writeProcFile(s: Step, file: string, text: string): void {
  const fd = s.libc.open(s.c.str(file), O_WRONLY_CLOEXEC, 0);
  s.check(Stage.IdMap, fd);
  const bytes = Buffer.from(text);
  const n = s.libc.write(fd, s.c.bytes(bytes), bytes.length);
  const errno = s.libc.errno();
  s.libc.close(fd);
  if (n !== bytes.length) throw { stage: Stage.IdMap, errno } satisfies ConfineFailure;
}

/**
 * A private mount namespace with the protected paths read-only. Outside a container it comes
 * with a new user namespace (which gives the rights to mount); inside one, the container's user
 * namespace already gives them, and its /proc could not map a process of another pid namespace.
 */
function enterNamespaces(s: Step, plan: Pick<ConfinePlan, "readOnly" | "hide">, newUser: boolean): void {
  // Read before unsharing: inside the new namespace they are unmapped (65534) until mapped.
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  if (s.libc.unshare(newUser ? CLONE_NEWUSER | CLONE_NEWNS : CLONE_NEWNS) < 0) {
    const errno = s.libc.errno();
    throw { stage: Stage.Unshare, errno, threaded: errno === EINVAL } satisfies ConfineFailure;
  }
  if (newUser) {
    writeProcFile(s, "/proc/self/setgroups", "deny");
    writeProcFile(s, "/proc/self/uid_map", `${uid} ${uid} 1\n`);
    writeProcFile(s, "/proc/self/gid_map", `${gid} ${gid} 1\n`);
  }
  s.check(Stage.MountPrivate, s.libc.mount(s.c.str("none"), s.c.str("/"), null, MS_REC | MS_PRIVATE, null));
  const attr = new BigUint64Array([BigInt(MOUNT_ATTR_RDONLY), 0n, 0n, 0n]);
  for (const p of plan.readOnly) {
    const path = s.c.str(p);
    s.check(Stage.Bind, s.libc.mount(path, path, null, MS_BIND | MS_REC, null));
    // mount_setattr changes only the read-only bit, leaving locked nosuid/nodev flags alone.
    s.check(Stage.ReadOnly, s.libc.syscall(SYS.mountSetattr, AT_FDCWD, path, AT_RECURSIVE, s.c.bytes(attr), 32, 0));
  }
  hideSockets(s, plan.hide);
}

/** Each named socket under /dev/null, where connect() finds no socket; one gone since it was listed needs nothing. */
function hideSockets(s: Step, sockets: readonly string[]): void {
  const devNull = s.c.str("/dev/null");
  for (const p of sockets) {
    if (s.libc.mount(devNull, s.c.str(p), null, MS_BIND, null) >= 0) continue;
    const errno = s.libc.errno();
    if (errno !== ENOENT && errno !== ENOTDIR && errno !== EACCES)
      throw { stage: Stage.HideSocket, errno } satisfies ConfineFailure;
  }
}

function enterAgain(cwd: string): void {
  try {
    process.chdir(cwd);
  } catch (e) {
    throw { stage: Stage.Cwd, errno: Math.abs((e as NodeJS.ErrnoException).errno ?? 2) } satisfies ConfineFailure;
  }
}

function restrictLandlock(s: Step, plan: ConfinePlan): void {
  if (!plan.handledFs && !plan.handledNet && !plan.scoped) return;
  const attr = new BigUint64Array([BigInt(plan.handledFs), BigInt(plan.handledNet), BigInt(plan.scoped)]);
  const ruleset = s.libc.syscall(SYS.landlockCreate, s.c.bytes(attr), rulesetAttrSize(plan.abi), 0, 0, 0, 0);
  s.check(Stage.Ruleset, ruleset);
  for (const rule of plan.rules) {
    const fd = s.libc.open(s.c.str(rule.path), O_PATH_CLOEXEC, 0);
    s.check(Stage.OpenRulePath, fd);
    // struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
    const attrBytes = Buffer.alloc(16);
    attrBytes.writeBigUInt64LE(BigInt(rule.access), 0);
    attrBytes.writeInt32LE(fd, 8);
    const added = s.libc.syscall(SYS.landlockAdd, ruleset, 1, s.c.bytes(attrBytes), 0, 0, 0);
    s.libc.close(fd);
    s.check(Stage.AddRule, added);
  }
  s.check(Stage.Restrict, s.libc.syscall(SYS.landlockRestrict, ruleset, 0, 0, 0, 0, 0));
  s.libc.close(ruleset);
}

function installSeccomp(s: Step, plan: ConfinePlan): void {
  const insns = plan.filterSockets ? networkFilter(process.arch) : undefined;
  if (!insns) return;
  const filter = encodeFilter(insns);
  // struct sock_fprog: u16 len, (padding), pointer to the instructions.
  const prog = Buffer.alloc(16);
  prog.writeUInt16LE(insns.length, 0);
  prog.writeBigUInt64LE(BigInt(s.c.bytes(filter)), 8);
  s.check(Stage.Seccomp, s.libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, s.c.bytes(prog), 0, 0));
}

const SIGKILL = 9;
const SIGSTOP = 19;
const SIG_SETMASK = 2;
/** glibc keeps 32 and 33 for itself; signal() refuses them. */
const LIBC_INTERNAL = new Set([32, 33]);

/**
 * What a runtime ignores (Bun ignores SIGPIPE and SIGXFSZ) or blocks survives execve, and the
 * command would inherit it: `yes | head -1` would then fail with "Broken pipe" instead of
 * ending quietly. Every disposition and the mask go back to the defaults a shell gives.
 */
export function resetSignals(libc: Libc, c: CArgs): void {
  for (let sig = 1; sig <= 64; sig++)
    if (sig !== SIGKILL && sig !== SIGSTOP && !LIBC_INTERNAL.has(sig)) libc.defaultSignal(sig);
  libc.sigprocmask(SIG_SETMASK, c.bytes(new Uint8Array(128)), null);
}

/**
 * Confines this thread per `plan` and execs; returns only on failure. With a container the
 * command is spawned inside it instead (a pid namespace takes only new children), and this
 * process waits and ends as the command did.
 */
export function confineInPlace(
  native: { libc: Libc; ffi: Pick<Ffi, "ptr"> },
  plan: ConfinePlan,
  target: ExecTarget,
): ConfineFailure {
  const s = new Step(native.libc, new CArgs(native.ffi));
  try {
    s.check(Stage.NoNewPrivs, native.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    if (plan.container) joinContainer(native.libc, s.c, plan.container);
    if (plan.readOnly.length > 0 || plan.hide.length > 0 || plan.container) {
      const cwd = process.cwd();
      enterNamespaces(s, plan, !plan.container);
      // After the binds: the cwd entered before them would stay on the writable mount underneath.
      enterAgain(cwd);
    }
    restrictLandlock(s, plan);
    installSeccomp(s, plan);
    if (plan.container) return spawnAndWait(native.libc, s.c, target);
    resetSignals(native.libc, s.c);
    native.libc.execve(s.c.str(target.file), s.c.strArray(target.argv), s.c.strArray(envList(target.env)));
    return { stage: Stage.Execve, errno: native.libc.errno() };
  } catch (e) {
    if (typeof e === "object" && e !== null && "stage" in e) return e as ConfineFailure;
    throw e;
  }
}
