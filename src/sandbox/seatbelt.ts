/**
 * The macOS mechanism: a Seatbelt profile run through `sandbox-exec`. Everything is denied,
 * then reads are allowed everywhere and writes only under the writable roots (their `.git`
 * and `.relay` excluded), the temp directories and the terminal devices; the network only
 * under `workspace-write` with network on. Paths reach the profile as `-D` parameters, never
 * as profile text, so no path needs quoting and none can change the profile. Pure apart from
 * the injectable `realpath` / `exists`, so it is unit-tested on any host.
 */
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";
import { PROTECTED_NAMES } from "../contracts/protected-names.ts";
import type { SandboxPolicy } from "../contracts/sandbox-policy.ts";

export const SANDBOX_EXEC = "/usr/bin/sandbox-exec";

export interface SeatbeltOptions {
  /** The command's temp directory ($TMPDIR, under /var/folders on macOS), writable with /tmp. */
  tmpdir?: string;
  /** Resolves symlinks; Seatbelt matches resolved paths. Defaults to the real one, or the path itself when it does not exist. */
  realpath?: (p: string) => string;
  /** Whether a path exists (a dangling symlink counts). Defaults to an `lstat`. */
  exists?: (p: string) => boolean;
}

export interface SeatbeltRoot {
  path: string;
  /** `.git` / `.relay` inside the root that stay read-only. */
  readOnly: string[];
}

export interface SeatbeltRoots {
  roots: SeatbeltRoot[];
  temp: string[];
  /** The policy's own read-only paths (symlink-free), kept read-only in every writable place. */
  readOnly?: string[];
}

export interface SeatbeltProfile {
  profile: string;
  /** `-D` parameters the profile refers to with `(param "NAME")`. */
  params: Record<string, string>;
}

/** macOS `/tmp` is a symlink to `/private/tmp`; both are listed so identity `realpath` still works. */
const TEMP_DIRS = ["/tmp", "/private/tmp"];

/** Devices any program expects to write; fixed names, so they are profile text. */
const WRITABLE_DEVICES = [
  "/dev/null",
  "/dev/zero",
  "/dev/tty",
  "/dev/dtracehelper",
  "/dev/stdout",
  "/dev/stderr",
  "/dev/ptmx",
];
/** PTY secondaries (`/dev/ttys003`). */
const PTY_PATTERN = "^/dev/ttys[0-9]+$";
/** PTYs and the `/dev/fd/N` aliases of descriptors already open. */
const DEVICE_PATTERNS = [PTY_PATTERN, "^/dev/fd/[0-9]+$"];

/**
 * Mach services an ordinary CLI looks up: user and group names (libinfo, membership), syslog
 * and os_log, notify(3), and CFPreferences. The keychain and window server are not listed.
 */
const BASE_MACH_SERVICES = [
  "com.apple.system.opendirectoryd.libinfo",
  "com.apple.system.opendirectoryd.membership",
  "com.apple.system.logger",
  "com.apple.logd",
  "com.apple.system.notification_center",
  "com.apple.cfprefsd.daemon",
  "com.apple.cfprefsd.agent",
];
/** With network on: TLS certificate trust, proxy and DNS configuration, the resolver. */
const NETWORK_MACH_SERVICES = [
  "com.apple.trustd.agent",
  "com.apple.SystemConfiguration.configd",
  "com.apple.SystemConfiguration.DNSConfiguration",
  "com.apple.dnssd.service",
];

function defaultRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function defaultExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

const uniq = (list: string[]): string[] => [...new Set(list)];

/**
 * The writable places for `policy`, symlink-free and without duplicates: each root with the
 * protected entries it holds, and the temp directories. Relative roots are dropped (fail closed).
 */
export function seatbeltRoots(policy: SandboxPolicy, opts: SeatbeltOptions = {}): SeatbeltRoots {
  if (policy.mode !== "workspace-write") return { roots: [], temp: [] };
  const realpath = opts.realpath ?? defaultRealpath;
  const exists = opts.exists ?? defaultExists;
  const canon = (p: string) => path.resolve(realpath(path.resolve(p)));
  const rootPaths = uniq(policy.writable_roots.filter((r) => path.isAbsolute(r)).map(canon));
  const roots = rootPaths.map((root) => ({ path: root, readOnly: protectedIn(root, canon, exists) }));
  const tempCandidates =
    policy.tmp_writable === false
      ? []
      : [...TEMP_DIRS, ...(opts.tmpdir && path.isAbsolute(opts.tmpdir) ? [opts.tmpdir] : [])];
  const temp = uniq(tempCandidates.map(canon)).filter((t) => !rootPaths.includes(t));
  const readOnly = uniq((policy.read_only_paths ?? []).filter((p) => path.isAbsolute(p)).map(canon));
  return readOnly.length ? { roots, temp, readOnly } : { roots, temp };
}

/**
 * The protected entries directly inside `root`. A symlinked `.git` is kept read-only both as
 * the link and as where it points, since Seatbelt checks writes through it at the target.
 */
function protectedIn(root: string, canon: (p: string) => string, exists: (p: string) => boolean): string[] {
  const out: string[] = [];
  for (const name of PROTECTED_NAMES) {
    const p = path.join(root, name);
    if (exists(p)) out.push(p, canon(p));
  }
  return uniq(out);
}

const quote = (s: string) => `"${s}"`;
const param = (name: string) => `(param ${quote(name)})`;

/** `(allow op filter...)`, or nothing without filters: a bare allow would allow everything. */
function allowAny(ops: string, filters: string[]): string[] {
  return filters.length === 0 ? [] : [`(allow ${ops}`, ...filters.map((f) => `  ${f}`), ")"];
}

/** Builds the profile text and its parameters; only `workspace-write` gets writes or network. */
export function seatbeltProfile(policy: SandboxPolicy, places: SeatbeltRoots): SeatbeltProfile {
  const params: Record<string, string> = {};
  const define = (name: string, value: string) => {
    params[name] = value;
    return param(name);
  };
  const writable = policy.mode === "workspace-write";
  const { writeFilters, socketDirs } = placeFilters(writable ? places : { roots: [], temp: [] }, define);
  const lines = [...BASE_RULES()];
  if (writeFilters.length > 0)
    lines.push(
      "; the writable roots (minus .git and .relay) and the temp directories",
      ...allowAny("file-write*", writeFilters),
    );
  lines.push(...socketRules(writable && policy.network, socketDirs));
  return { profile: lines.join("\n") + "\n", params };
}

/** What the profile says of every policy: processes, system services, reading, devices, terminals. */
const BASE_RULES = () => [
  "(version 1)",
  "(deny default)",
  "; processes: run and fork freely, but signal and inspect only processes in this sandbox",
  "(allow process-exec)",
  "(allow process-fork)",
  "(allow signal (target same-sandbox))",
  "(allow process-info* (target same-sandbox))",
  "(allow sysctl-read)",
  "(allow user-preference-read)",
  "(allow ipc-posix-sem)",
  "; system services a command-line program needs (user names, logging, notify, preferences)",
  ...allowAny(
    "mach-lookup",
    BASE_MACH_SERVICES.map((s) => `(global-name ${quote(s)})`),
  ),
  "; files: read anywhere, write only the devices below and the writable places",
  "(allow file-read*)",
  ...allowAny("file-write*", [
    ...WRITABLE_DEVICES.map((d) => `(literal ${quote(d)})`),
    ...DEVICE_PATTERNS.map((r) => `(regex #${quote(r)})`),
  ]),
  "; terminals: ioctl on the controlling tty and PTYs, and opening new PTYs",
  ...allowAny("file-ioctl", [
    `(literal ${quote("/dev/tty")})`,
    `(literal ${quote("/dev/ptmx")})`,
    `(regex #${quote(PTY_PATTERN)})`,
  ]),
  "(allow pseudo-tty)",
];

/** The filters of the places a command may write, and of where it may bind or reach sockets. */
function placeFilters(
  places: Pick<SeatbeltRoots, "roots" | "temp" | "readOnly">,
  define: (name: string, value: string) => string,
) {
  const writeFilters: string[] = [];
  const socketDirs: string[] = [];
  const own = (places.readOnly ?? []).map((p, j) => `(require-not (subpath ${define(`READ_ONLY_${j}`, p)}))`);
  places.roots.forEach((root, i) => {
    const rootParam = define(`WRITABLE_ROOT_${i}`, root.path);
    socketDirs.push(`(subpath ${rootParam})`);
    const excluded = [
      ...root.readOnly.map((p, j) => `(require-not (subpath ${define(`WRITABLE_ROOT_${i}_RO_${j}`, p)}))`),
      ...own,
    ];
    writeFilters.push(
      excluded.length === 0 ? `(subpath ${rootParam})` : `(require-all (subpath ${rootParam}) ${excluded.join(" ")})`,
    );
  });
  places.temp.forEach((dir, i) => {
    const filter = `(subpath ${define(`TEMP_DIR_${i}`, dir)})`;
    writeFilters.push(own.length === 0 ? filter : `(require-all ${filter} ${own.join(" ")})`);
    socketDirs.push(filter);
  });
  return { writeFilters, socketDirs };
}

/**
 * Unix-domain sockets are local IPC, not network, so both modes may create them (libuv and
 * others use socketpair for child stdio). Connecting and binding are limited to sockets in
 * the writable places: a host socket such as Docker's would be a way out of the sandbox.
 */
function socketRules(network: boolean, socketDirs: readonly string[]): string[] {
  const lines = [
    "; local IPC: Unix-domain sockets, bound or reached only inside the writable places",
    "(allow system-socket (socket-domain AF_UNIX))",
  ];
  if (network) {
    lines.push(
      "; network: on for this workspace-write policy",
      "(allow network-outbound)",
      "(allow network-inbound)",
      "(allow network-bind)",
      "(allow system-socket)",
    );
    lines.push(
      ...allowAny(
        "mach-lookup",
        NETWORK_MACH_SERVICES.map((s) => `(global-name ${quote(s)})`),
      ),
    );
  } else {
    lines.push(
      ...allowAny(
        "network-bind",
        socketDirs.map((f) => `(local unix-socket ${f})`),
      ),
    );
    lines.push(
      ...allowAny(
        "network-outbound",
        socketDirs.map((f) => `(remote unix-socket ${f})`),
      ),
    );
  }
  return lines;
}

/** The argv that runs `argv` under `policy` with `sandbox-exec`; unchanged for `danger-full-access`. */
export function seatbeltArgv(argv: string[], policy: SandboxPolicy, opts: SeatbeltOptions = {}): string[] {
  if (policy.mode === "danger-full-access") return [...argv];
  const { profile, params } = seatbeltProfile(policy, seatbeltRoots(policy, opts));
  const defines = Object.entries(params).map(([name, value]) => `-D${name}=${value}`);
  return [SANDBOX_EXEC, "-p", profile, ...defines, "--", ...argv];
}
