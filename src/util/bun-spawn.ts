/**
 * Bun.spawn, typed for the ways relay uses it (child peers, pipe-mode commands, the executor's
 * death guard), where the runtime is Bun. Under Bun, node:child_process wraps each pipe in Node
 * streams: about 5 ms for a process's first child, against 0.3–0.5 ms here (docs/performance.md).
 */

/** Bun's writer for a pipe or file. */
export interface BunFileSink {
  write(chunk: string | Uint8Array): number;
  flush(): number | Promise<number>;
  end(): number | Promise<number>;
  unref?(): void;
}

export interface BunSpawnOptions {
  cmd: string[];
  cwd?: string;
  env?: Record<string, string | undefined>;
  stdin: "pipe" | "ignore";
  stdout: "pipe" | "ignore";
  stderr: "pipe" | "ignore";
  /** A session of its own (setsid). */
  detached?: boolean;
  /** `signal` is the signal's name, e.g. "SIGTERM". */
  onExit?(proc: unknown, code: number | null, signal: string | null): void;
}

/** Bun's readable streams are async iterables too. */
export type BunReadable = ReadableStream<Uint8Array> & AsyncIterable<Uint8Array>;

/** A started child; a pipe is there where its option said "pipe". */
export interface BunSubprocess {
  pid: number;
  stdin: BunFileSink | null;
  stdout: BunReadable | null;
  stderr: BunReadable | null;
  kill(signal?: string): void;
  unref(): void;
}

/** Bun.spawn, or undefined on Node and Deno. It throws for a start it refuses at once (ENOENT, EACCES). */
export function bunSpawn(): ((o: BunSpawnOptions) => BunSubprocess) | undefined {
  return (globalThis as unknown as { Bun?: { spawn(o: BunSpawnOptions): BunSubprocess } }).Bun?.spawn;
}

/** How a child ended: its exit code, or the signal that ended it. */
export interface WatchedExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A Bun child whose end is recorded from its start on. */
export interface WatchedChild {
  readonly child: BunSubprocess;
  /** Settles when it ends. */
  readonly exited: Promise<WatchedExit>;
  /** Its end, once known. */
  exit(): WatchedExit | undefined;
}

/** Starts a child with `spawn` (Bun.spawn) and records its end; throws where Bun.spawn does. */
export function spawnWatched(
  spawn: (o: BunSpawnOptions) => BunSubprocess,
  options: Omit<BunSpawnOptions, "onExit">,
): WatchedChild {
  let end: WatchedExit | undefined;
  let settle!: (exit: WatchedExit) => void;
  const exited = new Promise<WatchedExit>((resolve) => (settle = resolve));
  const child = spawn({
    ...options,
    onExit: (_proc, code, signal) => settle((end = { code, signal: signal as NodeJS.Signals | null })),
  });
  return { child, exited, exit: () => end };
}
