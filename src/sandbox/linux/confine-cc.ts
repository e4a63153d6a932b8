/**
 * confine.c through Bun's embedded TinyCC: the forking path, for when the helper is threaded
 * and cannot unshare a user namespace in place (confine-ffi.ts is the usual path), the
 * user-namespace probe, which must run in a child, and the clone of the container's init. Bun only: Node and Deno have no bun:ffi.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { hashHex } from "../../util/random.ts";
import { err, type Result } from "../../util/result.ts";
import { rulesetAttrSize, Scope } from "./landlock-plan.ts";
import { CArena, CArgs, type CMarshal, envList } from "./libc.ts";
import type { ConfinePlan, ExecTarget } from "./plan-schema.ts";
import { privateDir, writePrivateFile } from "./private-dir.ts";
import { encodeFilter, networkFilter } from "./seccomp-bpf.ts";

type Pointer = number;
export interface NativeSymbols {
  relay_spawn_ns(...args: unknown[]): number;
  relay_probe_userns(): number;
  relay_start_container(...args: unknown[]): number;
  relay_spawn_child(...args: unknown[]): number;
  relay_make_pair(kind: number, fds: Pointer): number;
  relay_send(sock: number, buf: Pointer | null, len: number, fd: number, block: number): number | bigint;
  relay_recv(sock: number, buf: Pointer, cap: number, fd: Pointer): number | bigint;
  relay_init_wait(sock: number, pidfds: Pointer, count: number, ready: Pointer, timeoutMs: number): number;
  relay_init_signals(): number;
  relay_build_ruleset(...args: unknown[]): number;
  relay_paths_current(paths: Pointer, ids: Pointer, statxNr: number): number;
  relay_build_namespaces(readOnly: Pointer, hide: Pointer, ids: Pointer, statxNr: number, out: Pointer): number;
}
type RelayCall = (op: number, args: Pointer) => number | bigint;
interface BunFfi {
  cc(o: { source: string; symbols: { relay_call: { args: string[]; returns: string } } }): {
    symbols: { relay_call: RelayCall };
  };
  ptr(view: ArrayBufferView): Pointer;
}

/** confine.c's relay_call ops, in NativeSymbols' order. */
const Op = {
  relay_spawn_ns: 0,
  relay_probe_userns: 1,
  relay_start_container: 2,
  relay_spawn_child: 3,
  relay_make_pair: 4,
  relay_send: 5,
  relay_recv: 6,
  relay_init_wait: 7,
  relay_init_signals: 8,
  relay_build_ruleset: 9,
  relay_paths_current: 10,
  relay_build_namespaces: 11,
} as const satisfies Record<keyof NativeSymbols, number>;

/**
 * The native functions, each through confine.c's one bound symbol (relay_call): bun:ffi
 * compiles a wrapper per bound symbol, about a millisecond each at start-up. Arguments are
 * widened to 64 bits (null is 0); results come back as numbers.
 */
function bindOps(ffi: BunFfi, call: RelayCall): NativeSymbols {
  const args = new BigInt64Array(20);
  // Numbers go in as two little-endian 32-bit halves: no BigInt made per argument.
  const halves = new Int32Array(args.buffer);
  const bound =
    (op: number) =>
    (...xs: unknown[]): number => {
      if (xs.length > args.length)
        throw new Error(`relay_call op ${op}: ${xs.length} arguments, at most ${args.length}`);
      for (let i = 0; i < xs.length; i++) {
        const x = xs[i];
        if (typeof x === "bigint") args[i] = x;
        else {
          const n = x === null || x === undefined ? 0 : (x as number);
          halves[2 * i] = n | 0;
          halves[2 * i + 1] = Math.floor(n / 0x1_0000_0000);
        }
      }
      return Number(call(op, ffi.ptr(args)));
    };
  return Object.fromEntries(Object.entries(Op).map(([name, op]) => [name, bound(op)])) as unknown as NativeSymbols;
}
/** confine.c compiled into this process. */
export type Native = { symbols: NativeSymbols; ffi: BunFfi };

let loaded: Native | undefined;
let loadError: string | undefined;

interface SourceFile {
  path: string;
  cleanup(): void;
}

/** confine.c's text and the first 16 hex digits of its SHA-256, read and hashed once per process. */
let source: { text: string; hash: string } | undefined;

async function nativeSource(): Promise<{ text: string; hash: string }> {
  if (!source) {
    const text = ((await import("./confine.c", { with: { type: "text" } })) as { default: string }).default;
    source = { text, hash: hashHex("sha256", text).slice(0, 16) };
  }
  return source;
}

/** Which native part this binary carries: the hash that names its source file. */
export async function nativeSourceHash(): Promise<string> {
  return (await nativeSource()).hash;
}

/**
 * A real file holding confine.c, which TinyCC needs. The source is imported as text so it lives
 * inside the bundle (a compiled binary's $bunfs is not visible to TinyCC, and the bundle that a
 * binary recompiles itself from must be one file). It is kept, named by its hash, in this
 * user's private directory `relay-cc-<uid>` (mode 0700, owned by the user, not a link, so no
 * other user can swap it before it is compiled): every executor compiles it, and one killed
 * mid-compile must not leave a directory behind each time. Where that directory is not
 * private, a fresh 0700 directory is used for this compile and removed right after.
 */
async function sourceFile(): Promise<SourceFile> {
  const { text, hash } = await nativeSource();
  const shared = sharedSourceFile(text, hash);
  if (shared) return { path: shared, cleanup: () => {} };
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-cc-"));
  const file = path.join(dir, "confine.c");
  writeFileSync(file, text, { mode: 0o600 });
  return { path: file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `relay-cc-<uid>/confine-<hash>.c`, written once (atomically); undefined when the directory is not this user's own. */
function sharedSourceFile(text: string, hash: string): string | undefined {
  const dir = privateDir();
  if (!dir) return undefined;
  const name = `confine-${hash}.c`;
  if (!existsSync(path.join(dir, name))) writePrivateFile(dir, name, text);
  return path.join(dir, name);
}

/** Compiles confine.c once per process; the reason when that cannot work here. */
export async function loadNative(): Promise<Result<Native>> {
  if (loaded) return { ok: loaded };
  if (loadError) return err("sandbox_native", loadError);
  if (!(globalThis as { Bun?: unknown }).Bun) {
    loadError = `the built-in sandbox needs Bun's FFI, and this process runs on ${(globalThis as { Deno?: unknown }).Deno ? "Deno" : "Node"}; run it from the relay binary (or under bun)`;
    return err("sandbox_native", loadError);
  }
  if (process.platform !== "linux" || !["x64", "arm64"].includes(process.arch)) {
    loadError = `the built-in sandbox supports Linux on x64 and arm64, not ${process.platform}-${process.arch}`;
    return err("sandbox_native", loadError);
  }
  let source: SourceFile | undefined;
  try {
    const ffi = (await import("bun:ffi")) as unknown as BunFfi;
    source = await sourceFile();
    const { symbols } = ffi.cc({
      source: source.path,
      symbols: { relay_call: { args: ["i64", "ptr"], returns: "i64" } },
    });
    loaded = { symbols: bindOps(ffi, symbols.relay_call), ffi };
    return { ok: loaded };
  } catch (e) {
    loadError = `could not compile the sandbox's native part with Bun's TinyCC: ${(e as Error).message.trim()}`;
    return err("sandbox_native", loadError);
  } finally {
    source?.cleanup();
  }
}

/** A close-on-exec socket pair (SOCK_SEQPACKET) or pipe ([read end, write end]). */
export function makePair(native: Native, kind: "socket" | "pipe"): Result<[number, number]> {
  const fds = new Int32Array(2);
  const r = native.symbols.relay_make_pair(kind === "socket" ? 0 : 1, native.ffi.ptr(fds));
  return r === 0
    ? { ok: [fds[0]!, fds[1]!] }
    : err("sandbox_native", `${kind === "socket" ? "socketpair" : "pipe2"} failed (errno ${-r})`);
}

/** Open namespace files of the executor's container (container.ts openContainer). */
export interface ContainerFds {
  user: number;
  mnt: number;
  pid: number;
}

/**
 * Forks a child that (joining the container first, when given) enters a user + mount
 * namespace, binds the read-only paths, confines itself and execs the target; waits,
 * forwarding signals. Returns the command's exit status, or a negative native stage error
 * (see stages.ts, decodeNativeError).
 */
export function spawnConfined(native: Native, plan: ConfinePlan, target: ExecTarget, container?: ContainerFds): number {
  const c = new CArgs(native.ffi);
  const program = [c.str(target.file), c.strArray(target.argv), c.strArray(envList(target.env))];
  const join = container ? [container.user, container.mnt, container.pid] : [-1, -1, -1];
  return native.symbols.relay_spawn_ns(...program, ...planArgs(c, plan), ...join, c.str(process.cwd()));
}

const CLONE_NR: Record<string, number> = { x64: 56, arm64: 220 };

/**
 * Clones the init of the executor's container running `argv` (see container.ts), with `channel`
 * as its fd 3; its pid, or a negative stage error.
 */
export function startContainerInit(
  native: Native,
  argv: readonly string[],
  env: Record<string, string | undefined>,
  channel: number,
): number {
  const c = new CArgs(native.ffi);
  return native.symbols.relay_start_container(
    CLONE_NR[process.arch] ?? -1,
    c.str(argv[0]!),
    c.strArray(argv),
    c.strArray(envList(env)),
    channel,
  );
}

let socketFilter: { bpf: Uint8Array; length: number } | null | undefined;

/** The network filter's BPF program for this CPU (null where there is none), built once: every command of a container's init takes it. */
function networkProgram(): { bpf: Uint8Array; length: number } | null {
  if (socketFilter === undefined) {
    const insns = networkFilter(process.arch);
    socketFilter = insns ? { bpf: encodeFilter(insns), length: insns.length } : null;
  }
  return socketFilter;
}

/**
 * The plan's arguments as confine.c takes them, after the program's (path, argv, envp). With a
 * ruleset already built for its rules, or namespaces already made for its paths (kept: the
 * child joins those), what they were made from is not needed.
 */
function planArgs(c: CMarshal, plan: ConfinePlan, kept = { ruleset: false, namespaces: false }): unknown[] {
  const filter = plan.filterSockets ? networkProgram() : null;
  return [
    plan.handledFs,
    plan.handledNet,
    plan.scoped,
    rulesetAttrSize(plan.abi),
    kept.ruleset ? null : c.strArray(plan.rules.map((r) => r.path)),
    kept.ruleset ? null : c.u64Array(plan.rules.map((r) => r.access)),
    filter ? c.bytes(filter.bpf) : null,
    filter?.length ?? 0,
    kept.namespaces ? null : c.strArray(plan.readOnly),
    kept.namespaces ? null : c.strArray(plan.hide ?? []),
  ];
}

/**
 * How long the init waits for a forked child to reach its execve (see spawnMode) when it is
 * slow rather than stopped: a stopped one is killed within 50 ms.
 */
export const SPAWN_DEADLINE_MS = 30_000;

/**
 * How the container's init starts a command confined by `plan`: `vfork` where Landlock scopes
 * signals (ABI 6), so nothing outside the command can stop the child before its execve while
 * the init waits for it; otherwise a `fork` the init watches: another command of the session
 * could SIGSTOP the child there, and a stopped child is killed (at the latest at
 * SPAWN_DEADLINE_MS); undefined where this CPU's clone number is unknown (helpers start the
 * commands, and the init refuses such a plan).
 */
export function spawnMode(plan: ConfinePlan): "vfork" | "fork" | undefined {
  if ((plan.scoped & Scope.SIGNAL) !== 0) return "vfork";
  return CLONE_NR[process.arch] === undefined ? undefined : "fork";
}

let spawnArena: CArena | undefined;

/** The init's arena, begun with room for what spawnChild writes for this command (`env` as envList gives it). */
function arenaFor(
  native: Native,
  plan: ConfinePlan,
  target: ExecTarget,
  env: string[],
  cwd: string,
  kept: Int32Array,
): CArena {
  spawnArena ??= new CArena(native.ffi);
  const hide = plan.hide ?? [];
  let chars = target.file.length + cwd.length + 2;
  let slots = target.argv.length + env.length + 16;
  for (const a of target.argv) chars += a.length + 1;
  for (const e of env) chars += e.length + 1;
  if (kept[0]! < 0) {
    for (const r of plan.rules) chars += r.path.length + 1;
    slots += 2 * plan.rules.length + 2;
  }
  if (kept[1]! < 0) {
    for (const p of plan.readOnly) chars += p.length + 1;
    for (const p of hide) chars += p.length + 1;
    slots += plan.readOnly.length + hide.length + 2;
  }
  spawnArena.begin(chars, slots);
  return spawnArena;
}

/**
 * For the container's init: forks `target` confined per `plan`, in a session of its own with
 * `outFd` as stdout and stderr. Its pid in the container and on the host, or a negative stage
 * error once the child has ended.
 */
export function spawnChild(
  native: Native,
  plan: ConfinePlan,
  target: ExecTarget,
  io: { outFd: number; cwd: string; hostProcFd: number; deadlineMs?: number; kept?: Int32Array },
): { pid: number; hostPid: number; pidfd: number } | { failure: number } {
  const kept = io.kept ?? Int32Array.of(-1, -1, -1);
  const env = envList(target.env);
  const c = arenaFor(native, plan, target, env, io.cwd, kept);
  const out = new Int32Array(2);
  const program = [c.str(target.file), c.strArray(target.argv), c.strArray(env)];
  const fork = spawnMode(plan) === "fork" ? CLONE_NR[process.arch]! : -1;
  const r = native.symbols.relay_spawn_child(
    ...program,
    ...planArgs(c, plan, { ruleset: kept[0]! >= 0, namespaces: kept[1]! >= 0 }),
    io.outFd,
    c.str(io.cwd),
    io.hostProcFd,
    fork,
    io.deadlineMs ?? SPAWN_DEADLINE_MS,
    c.bytes(out),
    c.bytes(kept),
  );
  return r > 0 ? { pid: r, hostPid: out[0]!, pidfd: out[1]! } : { failure: r };
}
