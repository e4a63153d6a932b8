/**
 * The steps of confining a command, numbered as confine.c numbers them, and how a failure at
 * one reads in a message. Both paths (confine-ffi.ts in place, confine.c forked) report through
 * here; confine.c returns a failure as -(stage * 1000 + errno).
 */

export const Stage = {
  NoNewPrivs: 1,
  Ruleset: 2,
  OpenRulePath: 3,
  AddRule: 4,
  Restrict: 5,
  Seccomp: 6,
  Execve: 7,
  Pipe: 8,
  Fork: 9,
  Unshare: 10,
  IdMap: 11,
  MountPrivate: 12,
  Bind: 13,
  ReadOnly: 14,
  Clone: 15,
  MountProc: 16,
  JoinContainer: 17,
  Spawn: 18,
  Stdio: 19,
  Cwd: 20,
  HostPid: 21,
  /** The init's forked child was stopped (by another command's SIGSTOP?) before its execve: killed. */
  Stopped: 22,
  /** The init's forked child had not reached its execve by the deadline: killed. */
  Deadline: 23,
  /** Covering a named Unix socket outside the writable roots with /dev/null. */
  HideSocket: 24,
} as const;

const STAGE_TEXT: Record<number, string> = {
  [Stage.NoNewPrivs]: "prctl(PR_SET_NO_NEW_PRIVS)",
  [Stage.Ruleset]: "landlock_create_ruleset",
  [Stage.OpenRulePath]: "opening a path for a Landlock rule",
  [Stage.AddRule]: "landlock_add_rule",
  [Stage.Restrict]: "landlock_restrict_self",
  [Stage.Seccomp]: "installing the seccomp filter",
  [Stage.Execve]: "execve",
  [Stage.Pipe]: "pipe2",
  [Stage.Fork]: "fork",
  [Stage.Unshare]: "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
  [Stage.IdMap]: "writing the user namespace's id maps",
  [Stage.MountPrivate]: "making the mount namespace private",
  [Stage.Bind]: "bind-mounting a protected path",
  [Stage.ReadOnly]: "making a protected path read-only",
  [Stage.Clone]: "clone(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS)",
  [Stage.MountProc]: "mounting the container's /proc",
  [Stage.JoinContainer]: "joining the executor's container (setns)",
  [Stage.Spawn]: "posix_spawn",
  [Stage.Stdio]: "setting up stdin, stdout and stderr",
  [Stage.Cwd]: "changing to the working directory",
  [Stage.HostPid]: "finding the command's pid on the host",
  [Stage.Stopped]: "starting the command (it was stopped before its execve)",
  [Stage.Deadline]: "starting the command in time",
  [Stage.HideSocket]: "hiding a named Unix socket outside the writable roots",
};

const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  7: "E2BIG",
  8: "ENOEXEC",
  13: "EACCES",
  20: "ENOTDIR",
  22: "EINVAL",
  38: "ENOSYS",
  95: "EOPNOTSUPP",
  3: "ESRCH",
  16: "EBUSY",
  11: "EAGAIN",
  110: "ETIMEDOUT",
};

export interface ConfineFailure {
  stage: number;
  errno: number;
  /** unshare refused a threaded process: the forking path can still do it. */
  threaded?: boolean;
}

/** confine.c's negative return value as a failure. */
export function decodeNativeError(code: number): ConfineFailure {
  const n = -code;
  return { stage: Math.floor(n / 1000), errno: n % 1000 };
}

/** `step failed: ERRNO (n)`. */
export function describeFailure(f: ConfineFailure): string {
  return `${STAGE_TEXT[f.stage] ?? `stage ${f.stage}`} failed: ${ERRNO_NAMES[f.errno] ?? "errno"} (${f.errno})`;
}
