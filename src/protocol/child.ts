/**
 * Child peers: spawn a process that speaks the framed protocol on its stdio and return a
 * connected RpcPeer. `selfCommand()` finds how to re-run this very program, whichever way it
 * was started (compiled binary, `bun src/main.ts`, `deno run`, or a Node bundle).
 */
import { fileURLToPath } from "node:url";
import { Log, splitMirroredLines } from "../util/log.ts";
import { err, ok, type Result } from "../util/result.ts";
import { currentRuntime } from "../util/runtime.ts";
import { type ChildExit, type ChildIo, startChild } from "./child-io.ts";
import { splitCommandLine } from "./command-line.ts";
import { type PeerOptions, RpcPeer } from "./peer.ts";

const STDERR_TAIL_BYTES = 8 * 1024;
const log = Log.create("child");

/** Why this program cannot tell how to start itself again. */
export type SelfCommandErrorCode = "no_self_command" | "invalid_command_line";
/** Why a child peer did not start. */
export type ChildSpawnErrorCode = "invalid_command_line" | "spawn_failed" | SelfCommandErrorCode;

/** argv prefix that starts this program again; RELAY_SELF_COMMAND (a command line) overrides it. */
export function selfCommand(): Result<string[], SelfCommandErrorCode> {
  const override = process.env.RELAY_SELF_COMMAND;
  if (override) return splitCommandLine(override);
  const runtime = currentRuntime();
  if (runtime === "bun-compiled") return ok([process.execPath]);
  if (runtime === "deno") {
    const deno = (globalThis as unknown as { Deno: { execPath(): string; mainModule: string } }).Deno;
    return ok([deno.execPath(), "run", "-A", "--no-check", fileURLToPath(deno.mainModule)]);
  }
  const script = process.argv[1];
  if (!script)
    return err(
      "no_self_command",
      "cannot tell how this program was started; set RELAY_SELF_COMMAND to the command that runs relay",
    );
  return ok([process.execPath, script]);
}

export interface ChildPeerOptions extends Omit<PeerOptions, "describeEnd"> {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Copy the child's stderr to ours as it arrives (default: keep only a tail for errors). */
  inheritStderr?: boolean;
}

export type { ChildExit } from "./child-io.ts";

export class ChildPeer {
  private stderrTail = "";
  readonly exited: Promise<ChildExit>;

  constructor(
    readonly peer: RpcPeer,
    readonly child: Pick<ChildIo, "pid" | "kill">,
    readonly argv: readonly string[],
    exited: Promise<ChildExit>,
  ) {
    this.exited = exited;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Last bytes the child wrote to stderr. */
  get stderr(): string {
    return this.stderrTail;
  }

  appendStderr(text: string): void {
    this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_BYTES);
  }

  /** Close our side (the child sees EOF and should exit), then kill it if it lingers. */
  async shutdown(graceMs = 2000): Promise<ChildExit> {
    this.peer.close("shut down by this side");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.child.kill(signal);
  }
}

/** Why the connection ended: the start failure or exit status, and the stderr tail. */
async function describeChildEnd(
  argv: readonly string[],
  fate: ChildIo,
  stderr: { tail(): string | undefined; ended: Promise<void> },
): Promise<string> {
  // The exit status and the rest of stderr usually arrive right after stdout closes; wait briefly
  // for them (a grandchild may hold stderr open).
  await Promise.race([Promise.all([fate.exited, stderr.ended]), new Promise((r) => setTimeout(r, 500))]);
  const parts: string[] = [];
  const spawnError = fate.spawnError();
  const exitInfo = fate.exit();
  if (spawnError) parts.push(`could not start ${JSON.stringify(argv[0])}: ${spawnError.message}`);
  else if (exitInfo)
    parts.push(exitInfo.signal ? `process killed by ${exitInfo.signal}` : `process exited with code ${exitInfo.code}`);
  const tail = stderr.tail()?.trim();
  if (tail) parts.push(`last stderr: ${tail.slice(-1000)}`);
  return parts.join("; ");
}

/** The child's end closes the connection too, and both are logged. */
function closeWithChild(child: ChildIo, peer: RpcPeer, holder: ChildPeer, name: string): void {
  log.info("spawned", { name, pid: child.pid });
  void child.exited.then(({ code, signal }) => {
    const spawnError = child.spawnError();
    if (spawnError) {
      log.warn("could not start", { name, error: spawnError });
      // A spawn failure may never end stdout (Bun).
      return peer.close(`could not start ${JSON.stringify(holder.argv[0])}: ${spawnError.message}`, true);
    }
    if (code === 0) log.info("exited", { name, pid: child.pid, code });
    else log.warn("exited", { name, pid: child.pid, code, signal });
    // A grandchild can hold stdout open after the child died: the child's own end closes the
    // connection too.
    const t = setTimeout(() => {
      const how = signal ? `process killed by ${signal}` : `process exited with code ${code}`;
      const tail = holder.stderr.trim();
      peer.close(tail ? `${how}; last stderr: ${tail.slice(-1000)}` : how, code !== 0);
    }, 1000);
    t.unref?.();
  });
}

/**
 * Log lines a child mirrors (RELAY_LOG, inherited) pass through to our stderr, and stay out of
 * the tail kept for errors; the rest is the child's own stderr.
 */
function pipeChildStderr(child: ChildIo, holder: ChildPeer, inherit: boolean | undefined, ended: () => void): void {
  let held = "";
  const other = (text: string) => {
    if (!text) return;
    holder.appendStderr(text);
    if (inherit) process.stderr.write(text);
  };
  child.onStderr(
    (text) => {
      const split = splitMirroredLines(held + text);
      held = split.rest;
      if (split.log) process.stderr.write(split.log);
      other(split.other);
    },
    () => {
      other(held);
      held = "";
      ended();
    },
  );
}

/** Spawns `argv` and speaks the protocol over its stdin/stdout. */
export function spawnPeer(
  argv: readonly string[],
  options: ChildPeerOptions = {},
): Result<ChildPeer, ChildSpawnErrorCode> {
  if (argv.length === 0) return err("invalid_command_line", "the command line is empty");
  let child: ChildIo;
  try {
    child = startChild({ argv, cwd: options.cwd, env: options.env ?? process.env });
  } catch (e) {
    return err("spawn_failed", `could not start ${argv[0]}: ${(e as Error).message}`);
  }
  return ok(connectChild(argv, child, options));
}

/** The peer over a started child's pipes (spawned here, or early: protocol/early-child.ts). */
export function connectChild(argv: readonly string[], child: ChildIo, options: ChildPeerOptions = {}): ChildPeer {
  const name = options.name ?? argv[0]!;
  let holder: ChildPeer | undefined;
  let stderrDone!: () => void;
  const stderrEnded = new Promise<void>((r) => (stderrDone = r));
  const peer = new RpcPeer(child.input, child.output, {
    // Bad frames from a child are a bug worth seeing, whoever started it.
    onProtocolError: (m) => {
      log.warn("protocol error", { message: m });
      process.stderr.write(`relay: ${m}\n`);
    },
    ...options,
    name,
    describeEnd: () => describeChildEnd(argv, child, { tail: () => holder?.stderr, ended: stderrEnded }),
  });
  holder = new ChildPeer(peer, child, argv, child.exited);
  closeWithChild(child, peer, holder, name);
  pipeChildStderr(child, holder, options.inheritStderr, stderrDone);
  return holder;
}

/** Spawns this program with `subcommand` and returns the connected peer. */
export function spawnSelf(
  subcommand: string,
  args: readonly string[] = [],
  options: ChildPeerOptions = {},
): Result<ChildPeer, ChildSpawnErrorCode> {
  const self = selfCommand();
  if ("error" in self) return self;
  return spawnPeer([...self.ok, subcommand, ...args], { name: subcommand, ...options });
}

/** Spawns a user command line (`ssh host relay executor`) as a peer. */
export function spawnCommandLine(line: string, options: ChildPeerOptions = {}): Result<ChildPeer, ChildSpawnErrorCode> {
  const argv = splitCommandLine(line);
  if ("error" in argv) return argv;
  return spawnPeer(argv.ok, options);
}
