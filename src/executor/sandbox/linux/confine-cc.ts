/**
 * confine.c through Bun's embedded TinyCC: the forking path, for when the helper is threaded
 * and cannot unshare a user namespace in place (confine-ffi.ts is the usual path), the
 * user-namespace probe, which must run in a child, and the clone of the container's init. Bun only: Node and Deno have no bun:ffi.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { hashHex } from "../../../util/random.ts";
import { err, type Result } from "../../../util/result.ts";
import type { ExecTarget } from "./plan-schema.ts";
import { rulesetAttrSize } from "./landlock-plan.ts";
import { CArgs, envList } from "./libc.ts";
import type { ConfinePlan } from "./plan-schema.ts";
import { encodeFilter, networkFilter } from "./seccomp-bpf.ts";

type Pointer = number;
interface NativeSymbols {
  relay_spawn_ns(...args: unknown[]): number;
  relay_probe_userns(): number;
  relay_start_container(...args: unknown[]): number;
}
interface BunFfi {
  cc(o: { source: string; symbols: Record<string, { args: string[]; returns: string }> }): { symbols: NativeSymbols };
  ptr(view: ArrayBufferView): Pointer;
}

let loaded: { symbols: NativeSymbols; ffi: BunFfi } | undefined;
let loadError: string | undefined;

interface SourceFile {
  path: string;
  cleanup(): void;
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
  const text = ((await import("./confine.c", { with: { type: "text" } })) as { default: string }).default;
  const shared = sharedSourceFile(text);
  if (shared) return { path: shared, cleanup: () => {} };
  const dir = mkdtempSync(path.join(os.tmpdir(), "relay-cc-"));
  const file = path.join(dir, "confine.c");
  writeFileSync(file, text, { mode: 0o600 });
  return { path: file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `relay-cc-<uid>/confine-<hash>.c`, written once (atomically); undefined when the directory is not this user's own. */
function sharedSourceFile(text: string): string | undefined {
  const uid = process.getuid?.() ?? 0;
  const dir = path.join(os.tmpdir(), `relay-cc-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return undefined;
  const file = path.join(dir, `confine-${hashHex("sha256", text).slice(0, 16)}.c`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, file);
  }
  return file;
}

/** Compiles confine.c once per process; the reason when that cannot work here. */
export async function loadNative(): Promise<Result<{ symbols: NativeSymbols; ffi: BunFfi }>> {
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
    const strs = ["ptr", "ptr", "ptr", "u64", "u64", "u64", "i64", "ptr", "ptr", "ptr", "i64"];
    const { symbols } = ffi.cc({
      source: source.path,
      symbols: {
        relay_spawn_ns: { args: [...strs, "ptr", "i64", "i64", "i64", "ptr"], returns: "i32" },
        relay_probe_userns: { args: [], returns: "i32" },
        relay_start_container: { args: ["i64", "ptr", "ptr", "ptr"], returns: "i32" },
      },
    });
    loaded = { symbols, ffi };
    return { ok: loaded };
  } catch (e) {
    loadError = `could not compile the sandbox's native part with Bun's TinyCC: ${(e as Error).message.trim()}`;
    return err("sandbox_native", loadError);
  } finally {
    source?.cleanup();
  }
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
export function spawnConfined(native: { symbols: NativeSymbols; ffi: BunFfi }, plan: ConfinePlan, target: ExecTarget, container?: ContainerFds): number {
  const c = new CArgs(native.ffi);
  const insns = plan.filterSockets ? networkFilter(process.arch) : undefined;
  const bpf = insns ? encodeFilter(insns) : undefined;
  const args = [
    c.str(target.file),
    c.strArray(target.argv),
    c.strArray(envList(target.env)),
    plan.handledFs,
    plan.handledNet,
    plan.scoped,
    rulesetAttrSize(plan.abi),
    c.strArray(plan.rules.map((r) => r.path)),
    c.u64Array(plan.rules.map((r) => r.access)),
    bpf ? c.bytes(bpf) : null,
    insns?.length ?? 0,
  ];
  const join = container ? [container.user, container.mnt, container.pid, c.str(process.cwd())] : [-1, -1, -1, null];
  return native.symbols.relay_spawn_ns(...args, c.strArray(plan.readOnly), ...join);
}

const CLONE_NR: Record<string, number> = { x64: 56, arm64: 220 };

/** Clones the init of the executor's container running `argv` (see container.ts); its pid, or a negative stage error. */
export function startContainerInit(native: { symbols: NativeSymbols; ffi: BunFfi }, argv: readonly string[], env: Record<string, string | undefined>): number {
  const c = new CArgs(native.ffi);
  return native.symbols.relay_start_container(CLONE_NR[process.arch] ?? -1, c.str(argv[0]!), c.strArray(argv), c.strArray(envList(env)));
}
