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
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const LOG_FILE_NAME = "relay.log";
/** Default size of relay.log before it is rotated to relay.log.1 (RELAY_LOG_MAX_BYTES overrides). */
export const DEFAULT_LOG_MAX_BYTES = 4 * 1024 * 1024;
/** Rotated files kept: relay.log.1 (newest) to relay.log.3. */
export const LOG_FILES_KEPT = 3;
/** A lock older than this was left by a process killed while rotating. */
const STALE_LOCK_MS = 30_000;
const MAX_STRING = 4000;
const MAX_STACK = 16_000;
const MAX_LINE = 64 * 1024;

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
export function logSettingsFromEnv(env: Record<string, string | undefined>, dir: string | undefined): { settings: LogSettings; problems: string[] } {
  const problems: string[] = [];
  const raw = env.RELAY_LOG?.trim().toLowerCase();
  let level: LogLevel = "info";
  let stderr = false;
  if (raw) {
    if ((LOG_LEVELS as readonly string[]).includes(raw)) {
      level = raw as LogLevel;
      stderr = true;
    } else problems.push(`RELAY_LOG=${env.RELAY_LOG} is not one of ${LOG_LEVELS.join(", ")}; logging at info to the file only`);
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
    return f.usable() ? { path: f.path, writing: true } : { path: f.path, writing: false, problem: f.problem ?? "not written" };
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
  if (s?.stderr && s.level === "debug") process.stderr.write(humanLine(new Date(), "debug", "log", "no log file", { reason }));
}

// ---- formats ---------------------------------------------------------------------------------

function jsonLine(time: Date, level: LogLevel, service: string, msg: string, fields: LogFields | undefined): string {
  const record: Record<string, unknown> = { time: time.toISOString(), level, pid: process.pid, service, msg: cut(msg, MAX_STRING) };
  if (fields && Object.keys(fields).length > 0) record.fields = fields;
  let line = JSON.stringify(record);
  if (line.length > MAX_LINE) {
    record.fields = { truncated: `fields dropped: the line was ${line.length} characters` };
    line = JSON.stringify(record);
  }
  return line + "\n";
}

/** `relay[PID] HH:MM:SS.mmm LEVEL service: msg k=v ...`, one line (stacks stay in the file). */
export function humanLine(time: Date, level: LogLevel, service: string, msg: string, fields: LogFields | undefined): string {
  const hms = time.toTimeString().slice(0, 8) + "." + String(time.getMilliseconds()).padStart(3, "0");
  let line = `relay[${process.pid}] ${hms} ${level.toUpperCase()} ${service}: ${msg.replace(/\n/g, " ")}`;
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (k === "stack") continue;
    const value = v !== null && typeof v === "object" && "message" in v ? (v as { message: unknown }).message : v;
    const text = typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
    line += ` ${k}=${text}`;
  }
  return line + "\n";
}

/** A line of a child's stderr that is a record it mirrored (see humanLine). */
const HUMAN_LINE = /^relay\[\d+\] \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARN|ERROR) /;
const HUMAN_PREFIX = "relay[";

/**
 * Splits text read from a child's stderr into its mirrored log lines (`log`) and everything else
 * (`other`). A trailing piece without a newline that may still become a log line is held back
 * (`rest`: prepend it to the next chunk; flush it as `other` when the stream ends).
 */
export function splitMirroredLines(text: string): { log: string; other: string; rest: string } {
  let log = "";
  let other = "";
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    if (nl < 0) break;
    const line = text.slice(start, nl + 1);
    if (HUMAN_LINE.test(line)) log += line;
    else other += line;
    start = nl + 1;
  }
  const tail = text.slice(start);
  const maybe = tail.length < 200 && (tail.startsWith(HUMAN_PREFIX) || HUMAN_PREFIX.startsWith(tail));
  return maybe ? { log, other, rest: tail } : { log, other: other + tail, rest: "" };
}

const SECRET_KEY = /(api_?key|authorization|password|passwd|secret|token|credential|cookie)/i;

/** JSON-safe, bounded fields: errors become {name, message, stack}, secrets-looking keys are hidden. */
function cleanFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    out[k] = SECRET_KEY.test(k) ? "[redacted]" : cleanValue(v, 0);
  }
  return out;
}

function cleanValue(v: unknown, depth: number): unknown {
  if (typeof v === "string") return cut(v, MAX_STRING);
  if (typeof v === "bigint") return v.toString();
  if (v === null || typeof v !== "object") return typeof v === "function" || typeof v === "symbol" ? String(v) : v;
  if (v instanceof Error) {
    const e: Record<string, unknown> = { name: v.name, message: cut(v.message, MAX_STRING) };
    const code = (v as { code?: unknown }).code;
    if (typeof code === "string") e.code = code;
    if (v.stack) e.stack = cut(v.stack, MAX_STACK);
    return e;
  }
  if (depth >= 4) return "[nested]";
  if (Array.isArray(v)) return v.slice(0, 50).map((x) => cleanValue(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v).slice(0, 50)) out[k] = SECRET_KEY.test(k) ? "[redacted]" : cleanValue(x, depth + 1);
  return out;
}

function cut(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}…[${s.length - max} more characters]`;
}

// ---- the file --------------------------------------------------------------------------------

/** Errors that will not go away by trying again on the next line. */
const PERMANENT = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "EISDIR", "ELOOP", "ENAMETOOLONG"]);

/** relay.log for one process (exported for tests: two of them on one path act as two processes). */
export class LogFile {
  private fd: number | undefined;
  private ino = 0;
  /** Why the file cannot be written, for good. */
  private dead: string | undefined;
  /** The last reason the file could not be opened or written. */
  problem: string | undefined;

  constructor(
    readonly path: string,
    public maxBytes: number,
    private readonly onFail: (reason: string) => void,
  ) {}

  usable(): boolean {
    if (this.fd === undefined && !this.dead) this.open();
    return this.fd !== undefined;
  }

  write(line: string): void {
    if (this.fd === undefined && !this.open()) return;
    try {
      const size = fstatSync(this.fd!).size;
      if (size > 0 && size + line.length > this.maxBytes) this.rollOver();
      if (this.fd !== undefined) writeSync(this.fd, line);
    } catch (e) {
      // ENOSPC and the like: drop this line, try the next one afresh.
      this.close();
      this.failed(e);
    }
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }

  private open(): boolean {
    if (this.dead) return false;
    try {
      this.fd = this.openFile();
      this.ino = fstatSync(this.fd).ino;
      return true;
    } catch (e) {
      this.close();
      return this.failed(e);
    }
  }

  /** The file, creating its directory (0700) the first time; not RELAY_HOME, which the commands that use it create. */
  private openFile(): number {
    try {
      return openSync(this.path, "a", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    try {
      mkdirSync(path.dirname(this.path), { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    return openSync(this.path, "a", 0o600);
  }

  /**
   * ENOENT (no RELAY_HOME yet) and ENOSPC are tried again on the next line; the rest end the
   * file for good. The first failure is reported once.
   */
  private failed(e: unknown): false {
    const code = (e as NodeJS.ErrnoException).code ?? "";
    const first = this.problem === undefined;
    this.problem = (e as Error).message;
    if (PERMANENT.has(code)) this.dead = this.problem;
    if (first) this.onFail(`cannot write ${this.path}: ${this.problem}`);
    return false;
  }

  /**
   * The file is over the size: if another process already rotated it, follow to the new file;
   * else rotate it under the lock, or, if another process holds the lock, write on (the next
   * line will find the rotated file).
   */
  private rollOver(): void {
    let current: number | undefined;
    try {
      current = statSync(this.path).ino;
    } catch {
      current = undefined;
    }
    if (current === this.ino && this.lockAndRotate() === "busy") return;
    this.close();
    this.open();
  }

  private lockAndRotate(): "rotated" | "busy" {
    const lock = `${this.path}.lock`;
    let lockFd: number;
    try {
      lockFd = openSync(lock, "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") {
        try {
          if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) unlinkSync(lock);
        } catch {
          // gone already
        }
      }
      return "busy";
    }
    try {
      // Rotated by another process between our look and the lock: nothing to do.
      const now = statSync(this.path);
      if (now.ino !== this.ino) return "rotated";
      for (let i = LOG_FILES_KEPT; i >= 1; i--) {
        try {
          renameSync(i === 1 ? this.path : `${this.path}.${i - 1}`, `${this.path}.${i}`);
        } catch {
          // that generation does not exist yet
        }
      }
      return "rotated";
    } catch {
      return "rotated";
    } finally {
      closeSync(lockFd);
      try {
        unlinkSync(lock);
      } catch {
        // removed as stale by another process
      }
    }
  }
}
