/** One started child, whether on a PTY or on pipes. */
import type { Result } from "../../util/result.ts";

export interface ProcessExit {
  /** The exit status; 128 + signal number when a signal ended it; -1 when unknown. */
  code: number;
  signal: string | null;
}

/** Why a process could not be started. */
export type SpawnErrorCode = "invalid_request" | "spawn_failed" | "tty_unavailable";
/** Why a write to a process's stdin failed. */
export type WriteErrorCode = "stdin_closed" | "write_failed";

export interface RunningProcess {
  readonly pid: number;
  readonly tty: boolean;
  /** Merged stdout+stderr (pipes) or the terminal stream (PTY). Chunks may be reused: copy them. */
  onData(cb: (chunk: Uint8Array) => void): void;
  readonly exited: Promise<ProcessExit>;
  /** Settles once no more output can arrive (all output streams ended). May never settle if a
   * background grandchild keeps the stream open, so callers bound their wait. */
  readonly outputClosed: Promise<void>;
  write(data: string): Result<null, WriteErrorCode>;
  /**
   * Called once its owner will signal it no more. The container's init keeps an ended command's
   * pid (and so its process group's id) taken until then; other children need no call.
   */
  release?(): void;
}

/** A started child whose stdin is a pipe for one message (a warm sandbox helper's). */
export interface ControlledProcess extends RunningProcess {
  /** Writes `text` to the child's stdin and closes it. */
  sendAndClose(text: string): void;
}

export interface SpawnRequest {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  tty: boolean;
  cols?: number;
  rows?: number;
}
