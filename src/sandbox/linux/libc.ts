/**
 * libc through bun:ffi's dlopen (no compiler involved): the calls the in-place confinement
 * makes, plus C strings and pointer arrays kept alive for the length of a call. Variadic
 * functions (syscall, prctl, open) are declared with every argument they take.
 */
import { err, ok, type Result } from "../../util/result.ts";

type Pointer = number;

export interface Libc {
  syscall(n: number, a: number, b: number, c: number, d: number, e: number, f: number): number;
  prctl(op: number, a: number, b: number, c: number, d: number): number;
  unshare(flags: number): number;
  mount(src: Pointer | null, dst: Pointer, type: Pointer | null, flags: number, data: Pointer | null): number;
  open(path: Pointer, flags: number, mode: number): number;
  close(fd: number): number;
  write(fd: number, buf: Pointer, count: number): number;
  dup2(from: number, to: number): number;
  execve(path: Pointer, argv: Pointer, envp: Pointer): number;
  /** signal(2) with SIG_DFL (a null handler): the only disposition relay sets. */
  defaultSignal(sig: number): void;
  sigprocmask(how: number, set: Pointer, old: Pointer | null): number;
  /** signal(2) with SIG_IGN. */
  ignoreSignal(sig: number): void;
  setns(fd: number, nstype: number): number;
  posixSpawn(pid: Pointer, path: Pointer, actions: Pointer | null, attr: Pointer, argv: Pointer, envp: Pointer): number;
  spawnattrInit(attr: Pointer): number;
  spawnattrSetflags(attr: Pointer, flags: number): number;
  spawnattrSetsigdefault(attr: Pointer, set: Pointer): number;
  spawnattrSetsigmask(attr: Pointer, set: Pointer): number;
  sigemptyset(set: Pointer): number;
  sigaddset(set: Pointer, sig: number): number;
  sigtimedwait(set: Pointer, info: Pointer | null, timeout: Pointer | null): number;
  waitpid(pid: number, status: Pointer, options: number): number;
  /** waitid(2) for one pid (P_PID); `info` is a siginfo_t (128 bytes). */
  waitid(pid: number, info: Pointer, options: number): number;
  kill(pid: number, sig: number): number;
  getpid(): number;
  setrlimit(resource: number, limit: Pointer): number;
  errno(): number;
}

export interface Ffi {
  ptr(view: ArrayBufferView): Pointer;
  dlopen(
    name: string,
    symbols: Record<string, { args: string[]; returns: string }>,
  ): { symbols: Record<string, (...a: unknown[]) => unknown> };
  read: { i32(p: Pointer, offset?: number): number };
}

const SYMBOLS = {
  syscall: { args: ["i64", "i64", "i64", "i64", "i64", "i64", "i64"], returns: "i64" },
  prctl: { args: ["i32", "u64", "u64", "u64", "u64"], returns: "i32" },
  unshare: { args: ["i32"], returns: "i32" },
  mount: { args: ["ptr", "ptr", "ptr", "u64", "ptr"], returns: "i32" },
  open: { args: ["ptr", "i32", "i32"], returns: "i32" },
  close: { args: ["i32"], returns: "i32" },
  write: { args: ["i32", "ptr", "u64"], returns: "i64" },
  dup2: { args: ["i32", "i32"], returns: "i32" },
  execve: { args: ["ptr", "ptr", "ptr"], returns: "i32" },
  signal: { args: ["i32", "ptr"], returns: "ptr" },
  sigprocmask: { args: ["i32", "ptr", "ptr"], returns: "i32" },
  setns: { args: ["i32", "i32"], returns: "i32" },
  posix_spawn: { args: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr"], returns: "i32" },
  posix_spawnattr_init: { args: ["ptr"], returns: "i32" },
  posix_spawnattr_setflags: { args: ["ptr", "i16"], returns: "i32" },
  posix_spawnattr_setsigdefault: { args: ["ptr", "ptr"], returns: "i32" },
  posix_spawnattr_setsigmask: { args: ["ptr", "ptr"], returns: "i32" },
  sigemptyset: { args: ["ptr"], returns: "i32" },
  sigaddset: { args: ["ptr", "i32"], returns: "i32" },
  sigtimedwait: { args: ["ptr", "ptr", "ptr"], returns: "i32" },
  waitpid: { args: ["i32", "ptr", "i32"], returns: "i32" },
  waitid: { args: ["i32", "u32", "ptr", "i32"], returns: "i32" },
  kill: { args: ["i32", "i32"], returns: "i32" },
  getpid: { args: [], returns: "i32" },
  setrlimit: { args: ["i32", "ptr"], returns: "i32" },
  __errno_location: { args: [], returns: "ptr" },
};

/** glibc, then musl's loader name for this CPU. */
function libcNames(): string[] {
  const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
  return ["libc.so.6", `libc.musl-${arch}.so.1`];
}

let cached: { libc: Libc; ffi: Ffi } | undefined;

export async function loadLibc(): Promise<Result<{ libc: Libc; ffi: Ffi }>> {
  if (cached) return ok(cached);
  if (!(globalThis as { Bun?: unknown }).Bun)
    return err("sandbox_native", "the built-in sandbox needs Bun's FFI; run it from the relay binary (or under bun)");
  const ffi = (await import("bun:ffi")) as unknown as Ffi;
  const tried: string[] = [];
  for (const name of libcNames()) {
    try {
      const s = ffi.dlopen(name, SYMBOLS).symbols;
      const num = (v: unknown) => Number(v);
      const libc: Libc = {
        syscall: (...a) => num(s.syscall!(...a)),
        prctl: (...a) => num(s.prctl!(...a)),
        unshare: (f) => num(s.unshare!(f)),
        mount: (...a) => num(s.mount!(...a)),
        open: (...a) => num(s.open!(...a)),
        close: (fd) => num(s.close!(fd)),
        write: (...a) => num(s.write!(...a)),
        dup2: (a, b) => num(s.dup2!(a, b)),
        execve: (...a) => num(s.execve!(...a)),
        defaultSignal: (sig) => void s.signal!(sig, null),
        sigprocmask: (...a) => num(s.sigprocmask!(...a)),
        ignoreSignal: (sig) => void s.signal!(sig, 1),
        setns: (fd, t) => num(s.setns!(fd, t)),
        posixSpawn: (...a) => num(s.posix_spawn!(...a)),
        spawnattrInit: (a) => num(s.posix_spawnattr_init!(a)),
        spawnattrSetflags: (a, f) => num(s.posix_spawnattr_setflags!(a, f)),
        spawnattrSetsigdefault: (a, set) => num(s.posix_spawnattr_setsigdefault!(a, set)),
        spawnattrSetsigmask: (a, set) => num(s.posix_spawnattr_setsigmask!(a, set)),
        sigemptyset: (set) => num(s.sigemptyset!(set)),
        sigaddset: (set, sig) => num(s.sigaddset!(set, sig)),
        sigtimedwait: (...a) => num(s.sigtimedwait!(...a)),
        waitpid: (...a) => num(s.waitpid!(...a)),
        waitid: (pid, info, options) => num(s.waitid!(1 /* P_PID */, pid, info, options)),
        kill: (pid, sig) => num(s.kill!(pid, sig)),
        getpid: () => num(s.getpid!()),
        setrlimit: (r, l) => num(s.setrlimit!(r, l)),
        errno: () => ffi.read.i32(s.__errno_location!() as Pointer, 0),
      };
      cached = { libc, ffi };
      return ok(cached);
    } catch (e) {
      tried.push(`${name}: ${(e as Error).message}`);
    }
  }
  return err("sandbox_native", `cannot load the C library for the sandbox (${tried.join("; ")})`);
}

/** What marshals a native call's arguments: C strings, arrays of them or of numbers, and views passed as they are. */
export interface CMarshal {
  str(s: string): Pointer;
  strArray(list: readonly string[]): Pointer;
  u64Array(list: readonly number[]): Pointer;
  bytes(b: ArrayBufferView): Pointer;
}

/** Keeps C strings, arrays and structs alive while a native call uses them. */
export class CArgs implements CMarshal {
  private readonly keep: ArrayBufferView[] = [];
  constructor(private readonly ffi: Pick<Ffi, "ptr">) {}

  str(s: string): Pointer {
    return this.bytes(Buffer.from(`${s}\0`, "utf8"));
  }

  strArray(list: readonly string[]): Pointer {
    const arr = new BigUint64Array(list.length + 1);
    list.forEach((s, i) => (arr[i] = BigInt(this.str(s))));
    return this.bytes(arr);
  }

  u64Array(list: readonly number[]): Pointer {
    const arr = new BigUint64Array(Math.max(1, list.length));
    list.forEach((n, i) => (arr[i] = BigInt(n)));
    return this.bytes(arr);
  }

  bytes(b: ArrayBufferView): Pointer {
    this.keep.push(b);
    return this.ffi.ptr(b);
  }
}

/**
 * C strings and pointer arrays for one native call, written into one buffer reused from call
 * to call: one `ffi.ptr` per call instead of a buffer and an `ffi.ptr` per string. The
 * container's init makes such a call for every command, and its code runs cold (interpreted)
 * for most of a session, where each allocation and conversion costs most. Only for calls that
 * return before the arena is begun again (every native call here is synchronous).
 */
export class CArena implements CMarshal {
  private buf = Buffer.allocUnsafeSlow(64 * 1024);
  private base = 0;
  private off = 0;
  constructor(private readonly ffi: Pick<Ffi, "ptr">) {}

  /** Starts a call's arguments, room for `strings` (their UTF-16 lengths summed) and `slots` pointers or numbers; what the last call wrote may be overwritten. */
  begin(strings: number, slots: number): void {
    const room = 3 * strings + 16 * slots + 64;
    if (room > this.buf.length) this.buf = Buffer.allocUnsafeSlow(Math.max(room, 2 * this.buf.length));
    this.base = this.ffi.ptr(this.buf);
    this.off = 0;
  }

  str(s: string): Pointer {
    const at = this.off;
    this.off += this.buf.write(s, at, "utf8");
    this.buf[this.off++] = 0;
    return this.base + at;
  }

  strArray(list: readonly string[]): Pointer {
    const at = this.slots(list.length + 1);
    for (let i = 0; i < list.length; i++) this.setWord(at + 8 * i, this.str(list[i]!));
    this.setWord(at + 8 * list.length, 0);
    return this.base + at;
  }

  u64Array(list: readonly number[]): Pointer {
    const at = this.slots(Math.max(1, list.length));
    for (let i = 0; i < list.length; i++) this.setWord(at + 8 * i, list[i]!);
    return this.base + at;
  }

  /** A view the caller keeps alive through the call (its result, say), passed as it is. */
  bytes(b: ArrayBufferView): Pointer {
    return this.ffi.ptr(b);
  }

  /** `n` 8-byte words, aligned; their offset. */
  private slots(n: number): number {
    this.off = (this.off + 7) & ~7;
    const at = this.off;
    this.off += 8 * n;
    return at;
  }

  /** A number up to 2^53 (or -1) as a little-endian 64-bit word, without making a BigInt. */
  private setWord(at: number, n: number): void {
    this.buf.writeInt32LE(n | 0, at);
    this.buf.writeInt32LE(Math.floor(n / 0x1_0000_0000), at + 4);
  }
}

export function envList(env: Record<string, string | undefined>): string[] {
  return Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${v}`);
}
