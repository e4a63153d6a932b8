/** relay.log for one process: O_APPEND single-write lines, size rotation under a lock file. */
import { Buffer } from "node:buffer";
import {
  closeSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";

/** Rotated files kept: relay.log.1 (newest) to relay.log.3. */
export const LOG_FILES_KEPT = 3;
/** A lock older than this was left by a process killed while rotating. */
const STALE_LOCK_MS = 30_000;

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
      let size = fstatSync(this.fd!).size;
      if (size > 0 && size + line.length > this.maxBytes) {
        this.rollOver();
        size = this.fd === undefined ? 0 : fstatSync(this.fd).size;
      }
      if (this.fd !== undefined) this.writeWhole(this.fd, Buffer.from(line, "utf8"), size);
    } catch (e) {
      // ENOSPC and the like: drop this line, try the next one afresh.
      this.close();
      this.failed(e);
    }
  }

  /**
   * One write of the whole line. A write that fails or comes up short (the disk filled up
   * mid-line) is taken back off the end of the file when those last bytes are still ours: the
   * log holds whole lines or nothing.
   */
  private writeWhole(fd: number, buf: Buffer, before: number): void {
    let written: number;
    try {
      written = writeSync(fd, buf);
    } catch (e) {
      takeBack(fd, buf, before);
      throw e;
    }
    if (written >= buf.length) return;
    takeBack(fd, buf, before);
    throw Object.assign(
      new Error(
        `ENOSPC: a log line was cut short after ${written} of ${buf.length} bytes (no space left on the device?)`,
      ),
      { code: "ENOSPC" },
    );
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
      return openSync(this.path, "a+", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    try {
      mkdirSync(path.dirname(this.path), { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    return openSync(this.path, "a+", 0o600);
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

/** Truncates the file back to `before` if what follows it is the start of `buf` (ours, not another process's line). */
function takeBack(fd: number, buf: Buffer, before: number): void {
  try {
    const n = fstatSync(fd).size - before;
    if (n <= 0 || n > buf.length) return;
    const tail = Buffer.alloc(n);
    if (readSync(fd, tail, 0, n, before) === n && tail.equals(buf.subarray(0, n))) ftruncateSync(fd, before);
  } catch {
    // the line stays cut; a reader skips it
  }
}
