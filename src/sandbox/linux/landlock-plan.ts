/**
 * Turns a sandbox policy into what the kernel is asked for: the Landlock access rights to
 * handle, one rule per allowed path, the scopes, and the paths a mount namespace must keep
 * read-only (Landlock only adds rights, so `.git` under a writable root cannot be excluded by
 * a rule: it gets a read-only bind mount instead). Pure, so every case is unit-tested.
 */
import { existsSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { PROTECTED_NAMES } from "../../contracts/protected-names.ts";
import type { SandboxPolicy } from "../../contracts/sandbox-policy.ts";
import { entryAt } from "../../util/paths.ts";
import type { ConfinePlan, LandlockRule } from "./plan-schema.ts";
import { socketsToHide } from "./unix-sockets.ts";

/** Landlock filesystem access rights (uapi/linux/landlock.h) and the ABI that introduced each. */
export const Fs = {
  EXECUTE: 1 << 0,
  WRITE_FILE: 1 << 1,
  READ_FILE: 1 << 2,
  READ_DIR: 1 << 3,
  REMOVE_DIR: 1 << 4,
  REMOVE_FILE: 1 << 5,
  MAKE_CHAR: 1 << 6,
  MAKE_DIR: 1 << 7,
  MAKE_REG: 1 << 8,
  MAKE_SOCK: 1 << 9,
  MAKE_FIFO: 1 << 10,
  MAKE_BLOCK: 1 << 11,
  MAKE_SYM: 1 << 12,
  /** ABI 2: link or rename a file into another directory. */
  REFER: 1 << 13,
  /** ABI 3: truncate(2), ftruncate, open(O_TRUNC). */
  TRUNCATE: 1 << 14,
  /** ABI 5: ioctl on character and block devices. */
  IOCTL_DEV: 1 << 15,
} as const;

export const Net = { BIND_TCP: 1 << 0, CONNECT_TCP: 1 << 1 } as const;
export const Scope = { ABSTRACT_UNIX_SOCKET: 1 << 0, SIGNAL: 1 << 1 } as const;

/** Every filesystem right the running ABI can restrict. */
export function handledFsFor(abi: number): number {
  if (abi < 1) return 0;
  let mask = (1 << 13) - 1;
  if (abi >= 2) mask |= Fs.REFER;
  if (abi >= 3) mask |= Fs.TRUNCATE;
  if (abi >= 5) mask |= Fs.IOCTL_DEV;
  return mask;
}

/** Landlock's ruleset attribute grew with the ABI: handled_fs, then handled_net (4), then scoped (6). */
export function rulesetAttrSize(abi: number): number {
  return abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
}

const READ = Fs.EXECUTE | Fs.READ_FILE | Fs.READ_DIR;
/** Rights that make sense on a file (not a directory) rule. */
const FILE_RIGHTS = Fs.EXECUTE | Fs.WRITE_FILE | Fs.READ_FILE | Fs.TRUNCATE | Fs.IOCTL_DEV;
/** Device nodes any program expects to write (`> /dev/null` opens with O_TRUNC). */
const WRITABLE_DEVICES = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
  "/dev/ptmx",
];

export type { ConfinePlan, LandlockRule };

export interface PlanInput {
  policy: SandboxPolicy;
  abi: number;
  /** The command's temp directory ($TMPDIR), writable alongside /tmp when the policy allows it. */
  tmpdir?: string;
  /** Whether a user namespace can be made, for the read-only binds. */
  userns: boolean;
  /** Whether seccomp filters work, for turning the network off. */
  seccomp: boolean;
  /** `findPaths(policy, tmpdir)`, when the caller has it already. */
  found?: FoundPaths;
}

export interface FoundPaths {
  roots: string[];
  temp: string[];
  /** The protected paths inside them, to bind read-only. */
  readOnly: string[];
  /** Named Unix sockets to hide (network off), or undefined when /proc/net/unix cannot be read. */
  sockets: string[] | undefined;
}

/** The writable roots of `policy`, the protected paths in them and the sockets to hide, as a plan needs them. */
export function findPaths(policy: SandboxPolicy, tmpdir?: string): FoundPaths {
  const { roots, temp } = writableRoots(policy, tmpdir);
  const readOnly = [...new Set([...protectedPaths(roots), ...readOnlyInside(policy, [...roots, ...temp])])];
  return { roots, temp, readOnly, sockets: networkOn(policy) ? [] : socketsToHide(roots, temp) };
}

const networkOn = (policy: SandboxPolicy) => policy.mode === "workspace-write" && policy.network;

/**
 * The policy's own read-only paths that exist inside a writable place (symlink-free): only
 * those need a read-only bind, the others Landlock already keeps read-only.
 */
export function readOnlyInside(policy: SandboxPolicy, places: string[]): string[] {
  if (policy.mode !== "workspace-write") return [];
  const out: string[] = [];
  for (const p of policy.read_only_paths ?? []) {
    const r = real(p);
    if (r !== undefined && places.some((place) => r === place || r.startsWith(`${place}${path.sep}`))) out.push(r);
  }
  return out;
}

function real(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/** The writable directories the policy names, symlink-free, existing, without duplicates. */
export function writableRoots(policy: SandboxPolicy, tmpdir?: string): { roots: string[]; temp: string[] } {
  const temp =
    policy.mode === "workspace-write" && policy.tmp_writable !== false
      ? ["/tmp", "/var/tmp", "/dev/shm", ...(tmpdir ? [tmpdir] : [])]
      : [];
  const roots = policy.mode === "workspace-write" ? policy.writable_roots : [];
  const uniq = (list: string[]) => [...new Set(list.map(real).filter((p): p is string => p !== undefined))];
  return { roots: uniq(roots), temp: uniq(temp) };
}

/** `.git` and `.relay` entries directly inside the writable roots. */
export function protectedPaths(roots: string[]): string[] {
  const out: string[] = [];
  for (const root of roots) {
    for (const name of PROTECTED_NAMES) {
      const p = path.join(root, name);
      // Looked for at every command: a missing one is told without an exception (a stack trace each).
      if (!entryAt(p)) continue;
      if (existsSync(p)) out.push(real(p) ?? p);
    }
  }
  return [...new Set(out)];
}

const devices = new Map<string, boolean>();

/**
 * Whether device node `d` exists, looked at once per process rather than for every command: a
 * device that went away later makes the command's rule fail to open, and the command is
 * refused, never run with less confinement.
 */
function deviceExists(d: string): boolean {
  let found = devices.get(d);
  if (found === undefined) devices.set(d, (found = existsSync(d)));
  return found;
}

export type PlanResult = { ok: ConfinePlan } | { missing: string[] };

/**
 * Plans the confinement, or lists what the kernel lacks for the policy in full. With
 * `best_effort` the plan keeps what is possible and names the rest in `gaps`.
 */
export function planConfinement(input: PlanInput): PlanResult {
  const { policy, abi } = input;
  const missing: string[] = [];
  if (abi < 1) missing.push("Landlock (Linux 6.2+ built with it, and landlock in the kernel's lsm= list)");
  else if (abi < 3) missing.push(`Landlock ABI 3 for truncate control (this kernel has ABI ${abi}; Linux 6.2+)`);
  const { roots, temp, readOnly, sockets } = input.found ?? findPaths(policy, input.tmpdir);
  if (readOnly.length > 0 && !input.userns) {
    missing.push(
      `unprivileged user namespaces, to keep ${readOnly.map((p) => path.basename(p)).join(" and ")} read-only inside the workspace`,
    );
  }
  const network = networkOn(policy);
  if (!network && !input.seccomp) missing.push("seccomp filters, to turn the network off");
  if (sockets === undefined) missing.push("a readable /proc/net/unix, to find the named Unix sockets to hide");
  const hide = input.userns ? (sockets ?? []) : [];
  // Best effort still needs Landlock itself: without it nothing would confine writes at all.
  if (missing.length > 0 && (!policy.best_effort || abi < 1)) return { missing };
  const handledFs = handledFsFor(abi);
  const writeAll = handledFs & ~(Fs.MAKE_CHAR | Fs.MAKE_BLOCK);
  const deviceRights = (Fs.WRITE_FILE | Fs.READ_FILE | Fs.TRUNCATE | Fs.IOCTL_DEV) & handledFs;
  const rules: LandlockRule[] = [];
  if (handledFs) {
    rules.push({ path: "/", access: READ });
    if (deviceExists("/dev")) rules.push({ path: "/dev", access: (READ | Fs.IOCTL_DEV) & handledFs });
    for (const d of WRITABLE_DEVICES) if (deviceExists(d)) rules.push({ path: d, access: deviceRights & FILE_RIGHTS });
    if (deviceExists("/dev/pts")) rules.push({ path: "/dev/pts", access: deviceRights });
    for (const root of [...roots, ...temp]) {
      // A file root gets file rights only: directory rights on a file make the kernel refuse the rule.
      const dir = statSync(root, { throwIfNoEntry: false })?.isDirectory() ?? false;
      rules.push({ path: root, access: dir ? writeAll : writeAll & FILE_RIGHTS });
    }
  }
  return {
    ok: {
      abi,
      handledFs,
      handledNet: !network && abi >= 4 ? Net.BIND_TCP | Net.CONNECT_TCP : 0,
      scoped: abi >= 6 ? Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET : 0,
      rules,
      readOnly: input.userns ? readOnly : [],
      hide,
      filterSockets: !network && input.seccomp,
      gaps: [...missing, ...unhiddenSockets(input.userns ? [] : (sockets ?? []))],
      restoreEnv: {},
    },
  };
}

/**
 * Without user namespaces no socket can be hidden. Commands still run (every systemd host has
 * sockets under /run, so refusing would refuse everything there); the gap is said instead.
 */
function unhiddenSockets(sockets: string[]): string[] {
  if (sockets.length === 0) return [];
  const some = sockets.slice(0, 3).join(", ") + (sockets.length > 3 ? ", …" : "");
  return [
    `${sockets.length} named Unix socket(s) outside the writable roots stay reachable (${some}): hiding them needs unprivileged user namespaces`,
  ];
}
