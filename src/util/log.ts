/**
 * The structured log: one JSON line per record (`time, level, pid, service, msg, fields?`) appended
 * to `relay.log` in a directory the CLI names (`$RELAY_HOME/logs`), rotated by size, and mirrored
 * to stderr in a one-line human form when asked (`--verbose`, `RELAY_LOG`).
 *
 * Several processes (a session and its executor and code-mode children) write the same file:
 * every line is one `write(2)` on an O_APPEND descriptor, so lines never interleave, and no
 * line is buffered, so `process.exit()` loses none. No fsync. Rotation takes a lock file, so two
 * processes over the size at once rotate once; one whose descriptor points at a rotated file
 * notices on its next line (its file is over the size) and reopens.
 *
 * Logging never throws and never makes a command fail: without a usable directory it writes no
 * file (and says so once, at debug level, on stderr when mirroring). Until `Log.configure` runs
 * (library code in tests) records go nowhere.
 */
import path from "node:path";
import { LogFile } from "./log-file.ts";
import { cleanFields, humanLine, jsonLine, type LogFields, type LogLevel } from "./log-format.ts";

export { LOG_FILES_KEPT, LogFile } from "./log-file.ts";
export type { LogFields, LogLevel } from "./log-format.ts";
export { humanLine, splitMirroredLines } from "./log-format.ts";

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const LOG_FILE_NAME = "relay.log";
/** Default size of relay.log before it is rotated to relay.log.1 (RELAY_LOG_MAX_BYTES overrides). */
export const DEFAULT_LOG_MAX_BYTES = 4 * 1024 * 1024;

export interface LogSettings {
  /** Directory of relay.log; none: no file. Its parent must exist: the log does not create RELAY_HOME. */
  dir?: string | undefined;
  level: LogLevel;
  /** Mirror records at or above `level` to stderr, one human line each. */
  stderr: boolean;
  maxBytes: number;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Whether a record at `level` goes anywhere (to skip building costly fields). */
  enabled(level: LogLevel): boolean;
}

/**
 * Settings from the environment: RELAY_LOG=debug|info|warn|error sets the level and mirrors to
 * stderr (children started by relay inherit it); unset, the file gets info and stderr nothing.
 * RELAY_LOG_MAX_BYTES sets the rotation size. Bad values fall back, with a note to print.
 */
export function logSettingsFromEnv(
  env: Record<string, string | undefined>,
  dir: string | undefined,
): { settings: LogSettings; problems: string[] } {
  const problems: string[] = [];
  const raw = env.RELAY_LOG?.trim().toLowerCase();
  let level: LogLevel = "info";
  let stderr = false;
  if (raw) {
    if ((LOG_LEVELS as readonly string[]).includes(raw)) {
      level = raw as LogLevel;
      stderr = true;
    } else
      problems.push(
        `RELAY_LOG=${env.RELAY_LOG} is not one of ${LOG_LEVELS.join(", ")}; logging at info to the file only`,
      );
  }
  let maxBytes = DEFAULT_LOG_MAX_BYTES;
  const size = env.RELAY_LOG_MAX_BYTES?.trim();
  if (size) {
    const n = Number(size);
    if (Number.isInteger(n) && n > 0) maxBytes = n;
    else problems.push(`RELAY_LOG_MAX_BYTES=${size} is not a positive integer; using ${DEFAULT_LOG_MAX_BYTES}`);
  }
  return { settings: { dir, level, stderr, maxBytes }, problems };
}

// ---- the one log of this process -------------------------------------------------------------

interface State {
  settings: LogSettings | undefined;
  file: LogFile | undefined;
}

const state: State = { settings: undefined, file: undefined };

function minRank(): number {
  return state.settings ? RANK[state.settings.level] : Infinity;
}

function emit(level: LogLevel, service: string, msg: string, fields: LogFields | undefined): void {
  const s = state.settings;
  if (!s || RANK[level] < RANK[s.level]) return;
  try {
    const time = new Date();
    const clean = fields ? cleanFields(fields) : undefined;
    if (state.file) state.file.write(jsonLine(time, level, service, msg, clean));
    if (s.stderr) process.stderr.write(humanLine(time, level, service, msg, clean));
  } catch {
    // A log line is never worth failing the command for.
  }
}

export const Log = {
  /** A logger for one part of relay; records carry `service`. Cheap: make one per module. */
  create(service: string): Logger {
    return {
      debug: (msg, fields) => emit("debug", service, msg, fields),
      info: (msg, fields) => emit("info", service, msg, fields),
      warn: (msg, fields) => emit("warn", service, msg, fields),
      error: (msg, fields) => emit("error", service, msg, fields),
      enabled: (level) => RANK[level] >= minRank(),
    };
  },

  /** Starts (or changes) this process's log. Touches no file until the first record. */
  configure(settings: LogSettings): void {
    const file = settings.dir ? path.join(settings.dir, LOG_FILE_NAME) : undefined;
    if (state.file?.path !== file) {
      state.file?.close();
      state.file = file ? new LogFile(file, settings.maxBytes, noteNoFile) : undefined;
    }
    if (state.file) state.file.maxBytes = settings.maxBytes;
    state.settings = { ...settings };
  },

  /** The current settings, if configured. */
  settings(): LogSettings | undefined {
    return state.settings ? { ...state.settings } : undefined;
  },

  /** Where records go: the file's path, unless it cannot be written (then undefined). */
  filePath(): string | undefined {
    return state.file?.usable() ? state.file.path : undefined;
  },

  /** The file relay.log would be (whether or not it can be written), and why not when not. */
  fileStatus(): { path: string; writing: boolean; problem?: string } | undefined {
    const f = state.file;
    if (!f) return undefined;
    return f.usable()
      ? { path: f.path, writing: true }
      : { path: f.path, writing: false, problem: f.problem ?? "not written" };
  },

  /** Back to the unconfigured state (tests). */
  reset(): void {
    state.file?.close();
    state.file = undefined;
    state.settings = undefined;
  },
};

function noteNoFile(reason: string): void {
  const s = state.settings;
  if (s?.stderr && s.level === "debug")
    process.stderr.write(humanLine(new Date(), "debug", "log", "no log file", { reason }));
}
