/**
 * A child process's pipes as a peer needs them, started with Bun.spawn under Bun and with
 * node:child_process elsewhere. Under Bun, node:child_process wraps each pipe in Node streams:
 * about 5 ms of the parent's time for the first child (relay run starting its executor, every
 * infty role starting its own), and more work per frame after.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  type BunSpawnOptions,
  type BunSubprocess,
  bunSpawn,
  spawnWatched,
  type WatchedChild,
  type WatchedExit,
} from "../util/bun-spawn.ts";
import { BunStdin, BunStdout } from "./bun-stdio.ts";
import type { ByteSink, ByteSource } from "./byte-stream.ts";

/** How a child ended (util/bun-spawn.ts names it for both ways of starting one). */
export type ChildExit = WatchedExit;

/** A started child: its pid, its pipes, and how it ended. */
export interface ChildIo {
  readonly pid: number | undefined;
  kill(signal: NodeJS.Signals): void;
  /** The child's stdout (what it says) and stdin (what we say). */
  readonly input: ByteSource;
  readonly output: ByteSink;
  /** The child's stderr as text, then its end. */
  onStderr(text: (chunk: string) => void, end: () => void): void;
  /** Settles on exit, or on a failed start (node:child_process reports ENOENT this way). */
  readonly exited: Promise<ChildExit>;
  /** Why it could not start, once known. */
  spawnError(): Error | undefined;
  /** The exit, once known. */
  exit(): ChildExit | undefined;
}

export interface ChildStart {
  argv: readonly string[];
  cwd?: string;
  env: NodeJS.ProcessEnv;
}

/** Starts the child; throws where node:child_process does (e.g. an argument with a NUL). */
export function startChild(start: ChildStart): ChildIo {
  const spawn = bunSpawn();
  // A start Bun refuses at once (no such program) goes the Node way, which reports it through
  // the connection as before: "could not start ...".
  return (spawn && startWithBun(spawn, start)) || startWithNode(start);
}

function startWithBun(spawn: (o: BunSpawnOptions) => BunSubprocess, start: ChildStart): ChildIo | undefined {
  try {
    return bunChildIo(
      spawnWatched(spawn, {
        cmd: [...start.argv],
        ...(start.cwd ? { cwd: start.cwd } : {}),
        env: start.env,
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
      }),
    );
  } catch {
    return undefined;
  }
}

/** A Bun child started with its three pipes (here, or early by protocol/early-spawn.ts) as a peer's pipes. */
export function bunChildIo({ child, exited, exit }: WatchedChild): ChildIo {
  return {
    pid: child.pid,
    kill: (signal) => child.kill(signal),
    // All three are pipes: whoever started it asked for them.
    input: new BunStdin(() => child.stdout!),
    output: new BunStdout(child.stdin!),
    onStderr: (text, end) => void readText(child.stderr!, text).then(end),
    exited,
    spawnError: () => undefined,
    exit,
  };
}

/** Decodes a stream as UTF-8 text, chunk by chunk, until it ends or breaks. */
async function readText(stream: AsyncIterable<Uint8Array>, text: (chunk: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  try {
    for await (const chunk of stream) text(decoder.decode(chunk, { stream: true }));
  } catch {
    // a broken pipe ends the text as its end would
  }
  const rest = decoder.decode();
  if (rest) text(rest);
}

function startWithNode(start: ChildStart): ChildIo {
  const child: ChildProcess = spawn(start.argv[0]!, start.argv.slice(1), {
    cwd: start.cwd,
    env: start.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let exitInfo: ChildExit | undefined;
  let spawnError: Error | undefined;
  const exited = new Promise<ChildExit>((resolve) => {
    child.once("exit", (code, signal) => resolve((exitInfo = { code, signal })));
    child.once("error", (e) => {
      spawnError = e;
      resolve((exitInfo = { code: null, signal: null }));
    });
  });
  // EPIPE on a dead child's stdin is reported through the peer's close reason.
  child.stdin!.on("error", () => {});
  return {
    get pid() {
      return child.pid;
    },
    kill: (signal) => void child.kill(signal),
    input: child.stdout!,
    output: child.stdin!,
    onStderr: (text, end) => {
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", text);
      child.stderr!.on("end", end);
    },
    exited,
    spawnError: () => spawnError,
    exit: () => exitInfo,
  };
}
