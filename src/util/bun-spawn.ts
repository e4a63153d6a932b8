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
