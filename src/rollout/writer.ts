/**
 * Append-only JSONL rollout writer. Each `append` batch becomes one buffer of whole lines and one
 * write loop; batches never interleave, and a crash can at worst tear the last line (which the
 * reader skips and reports). A write that fails (a full disk) is cut back to the last whole line,
 * and every append after it fails too: the record never has a gap. `flush()` fsyncs.
 */
import { Buffer } from "node:buffer";
import { ftruncateSync, writeSync } from "node:fs";
import { chmod, type FileHandle, mkdir, open, unlink } from "node:fs/promises";
import path from "node:path";
import { sessionsDir } from "../home/home.ts";
import type { ResponseItem } from "../model/items.ts";
import { localFields } from "../util/local-time.ts";
import { err, errorMessage, isErr, ok, type Result } from "../util/result.ts";
import { VERSION } from "../version.ts";
import { uuidv7 } from "./ids.ts";
import { readSessionMeta } from "./reader.ts";
import type { Compacted, EventMsg, GitInfo, RelaySessionSource, SessionMeta, TurnContext } from "./schema.ts";

/** What a caller supplies for a new session; id, timestamp, originator and version are filled in. */
/** What Relay writes as `originator`: a rollout with another one was written by another program. */
export const RELAY_ORIGINATOR = "relay";

export interface NewSessionMeta {
  id?: string;
  cwd: string;
  source: RelaySessionSource | (string & {});
  originator?: string;
  cli_version?: string;
  model_provider?: string;
  base_instructions?: { text: string };
  forked_from_id?: string;
  forked_from_path?: string;
  forked_from_lines?: number;
  git?: GitInfo;
  /** Extra keys are written as-is. */
  [extra: string]: unknown;
}

type Stamp = { timestamp?: string };
export type RolloutLineInput = Stamp &
  (
    | { type: "session_meta"; payload: SessionMeta }
    | { type: "response_item"; payload: ResponseItem }
    | { type: "event_msg"; payload: EventMsg }
    | { type: "turn_context"; payload: TurnContext }
    | { type: "compacted"; payload: Compacted }
  );

// Persistence policy (after the reference system's): history-bearing items and the events a
// resumed UI or the memory pipeline needs. `exec_command_end` is NOT persisted by default: its
// output is already in the `function_call_output` item, and keeping both would double the size
// of long sessions. "extended" adds it plus errors and warnings for debugging.
const PERSISTED_EVENTS = new Set([
  "user_message",
  "agent_message",
  "agent_reasoning",
  "agent_reasoning_raw_content",
  "token_count",
  "context_compacted",
  "turn_aborted",
  "task_started",
  "turn_started",
  "task_complete",
  "turn_complete",
  "patch_apply_end",
  "mcp_tool_call_end",
  "web_search_end",
  "image_generation_end",
  "entered_review_mode",
  "exited_review_mode",
  "thread_rolled_back",
  "thread_goal_updated",
]);
const EXTENDED_EVENTS = new Set(["exec_command_end", "error", "warning", "stream_error"]);

export type EventPersistence = "limited" | "extended";

/** Whether an event_msg of this type belongs in the rollout. Deltas and begin events never do. */
export function shouldPersistEvent(type: string, mode: EventPersistence = "limited"): boolean {
  if (type.endsWith("_delta") || type.endsWith("_begin")) return false;
  return PERSISTED_EVENTS.has(type) || (mode === "extended" && EXTENDED_EVENTS.has(type));
}

/** Response items are all persisted except transient markers. */
export function shouldPersistItem(item: { type: string }): boolean {
  return item.type !== "compaction_trigger" && item.type !== "ghost_snapshot";
}

/** `rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl` in local time, and its `YYYY/MM/DD` directory. */
export function rolloutRelativePath(id: string, at: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  const local = localFields(at);
  const [y, m, d] = [String(local.year), p(local.month), p(local.day)];
  const stamp = `${y}-${m}-${d}T${p(local.hours)}-${p(local.minutes)}-${p(local.seconds)}`;
  return path.join(y, m, d, `rollout-${stamp}-${id}.jsonl`);
}

/** Rollouts are a verbatim record (secrets included): owner-only files in owner-only directories. */
export const ROLLOUT_FILE_MODE = 0o600;
export const ROLLOUT_DIR_MODE = 0o700;

/**
 * Creates `dir` and tightens it and every directory between it and `root` (`sessions/`, `YYYY/`,
 * `MM/`, `DD/`) to 0700: `mkdir`'s mode only applies to new directories and is cut by the umask.
 * Best effort: Windows has no such modes, and a directory we do not own keeps its own.
 */
export async function makePrivateDirs(root: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: ROLLOUT_DIR_MODE });
  if (process.platform === "win32") return;
  const rel = path.relative(root, dir);
  if (rel.startsWith("..") || path.isAbsolute(rel)) return;
  const parts = rel.split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++)
    await chmod(path.join(root, ...parts.slice(0, i)), ROLLOUT_DIR_MODE).catch(() => undefined);
}

/** Sets 0600 on a rollout (new: against the umask; old: written before rollouts were private). */
async function makePrivateFile(file: string): Promise<void> {
  if (process.platform === "win32") return;
  await chmod(file, ROLLOUT_FILE_MODE).catch(() => undefined);
}

export class RolloutWriter {
  private tail: Promise<unknown> = Promise.resolve();
  /** Operations in the chain not yet settled (a flush's fsync, a batch queued behind one). */
  private busy = 0;
  private closed = false;
  /** The failed write that ended this writer: every later append returns it (no gap in the record). */
  private failure: Result<null> | undefined;

  private constructor(
    readonly path: string,
    readonly meta: SessionMeta,
    private readonly fh: FileHandle,
    /** The file may end in a partial line (crash, failed write): terminate it before appending. */
    private needsNewline: boolean,
    /** Bytes in the file, all of them whole lines once needsNewline is false. */
    private size: number,
  ) {}

  get id(): string {
    return this.meta.id;
  }

  /**
   * A new rollout under $RELAY_HOME/sessions/YYYY/MM/DD, or directly in `dir` (an infty run keeps
   * its roles' rollouts in its own store, where every worker of a fleet reaches them).
   */
  static async create(opts: {
    home: string;
    meta: NewSessionMeta;
    now?: Date;
    dir?: string;
  }): Promise<Result<RolloutWriter>> {
    const now = opts.now ?? new Date();
    const meta: SessionMeta = {
      ...opts.meta,
      id: opts.meta.id ?? uuidv7(now.getTime()),
      timestamp: now.toISOString(),
      cwd: opts.meta.cwd,
      originator: opts.meta.originator ?? RELAY_ORIGINATOR,
      cli_version: opts.meta.cli_version ?? VERSION,
      source: opts.meta.source,
    };
    const relative = rolloutRelativePath(meta.id, now);
    const file = opts.dir ? path.join(opts.dir, path.basename(relative)) : path.join(sessionsDir(opts.home), relative);
    const root = opts.dir ? path.dirname(opts.dir) : sessionsDir(opts.home);
    let fh: FileHandle;
    try {
      await makePrivateDirs(root, path.dirname(file));
      fh = await open(file, "ax", ROLLOUT_FILE_MODE);
      await makePrivateFile(file);
    } catch (e) {
      return err(
        "rollout_create",
        `cannot create rollout ${file}: ${errorMessage(e)} (the session did not start; fix the cause, e.g. free space, and run it again)`,
        { path: file },
      );
    }
    const writer = new RolloutWriter(file, meta, fh, false, 0);
    const first = await writer.append([{ type: "session_meta", payload: meta, timestamp: meta.timestamp }]);
    if (isErr(first)) {
      // No empty or torn rollout is left behind: it would list as unreadable and resume as empty.
      await fh.close().catch(() => {});
      await unlink(file).catch(() => {});
      return err(
        "rollout_create",
        `${first.error.message} (the session did not start; free space, or fix the cause, and run it again)`,
        { path: file },
      );
    }
    return ok(writer);
  }

  /** Reopens an existing rollout to append to the same file (no copy). */
  static async resume(file: string): Promise<Result<RolloutWriter>> {
    const meta = await readSessionMeta(file);
    if (isErr(meta)) return meta;
    let fh: FileHandle;
    let needsNewline = false;
    let size: number;
    try {
      fh = await open(file, "a+", ROLLOUT_FILE_MODE);
      await makePrivateFile(file);
      size = (await fh.stat()).size;
      if (size > 0) {
        const last = Buffer.alloc(1);
        await fh.read(last, 0, 1, size - 1);
        needsNewline = last[0] !== 0x0a;
      }
    } catch (e) {
      return err("rollout_open", `cannot open rollout ${file} for appending: ${errorMessage(e)}`, { path: file });
    }
    return ok(new RolloutWriter(file, meta.ok, fh, needsNewline, size));
  }

  /**
   * Writes the lines as one batch, in order, after every earlier batch. The write itself is
   * synchronous (into the kernel's cache; `flush()` syncs to disk): a session awaits it before it
   * acts on what it records (a call is on file before it runs), and an asynchronous write cost
   * each of those awaits a hop through the thread pool, 0.1 ms three times per tool call. Only
   * while a flush is under way does a batch wait in the chain behind it (after `close()` an
   * append fails with `rollout_closed`).
   */
  append(lines: readonly RolloutLineInput[]): Promise<Result<null>> {
    let text: string;
    try {
      text = lines
        .map(
          (l) =>
            JSON.stringify({ timestamp: l.timestamp ?? new Date().toISOString(), type: l.type, payload: l.payload }) +
            "\n",
        )
        .join("");
    } catch (e) {
      return Promise.resolve(err("rollout_encode", `cannot encode a rollout line: ${errorMessage(e)}`));
    }
    if (text === "") return Promise.resolve(ok(null));
    if (this.closed) return Promise.resolve(err("rollout_closed", `rollout ${this.path} is already closed`));
    if (this.failure) return Promise.resolve(this.failure);
    if (this.busy === 0) return Promise.resolve(this.writeNow(text));
    return this.enqueue(async () => this.writeNow(text));
  }

  private writeNow(text: string): Result<null> {
    if (this.failure) return this.failure;
    const buf = Buffer.from(this.needsNewline ? "\n" + text : text, "utf8");
    let off = 0;
    try {
      while (off < buf.length) off += writeSync(this.fh.fd, buf, off, buf.length - off);
      this.needsNewline = false;
      this.size += buf.length;
      return ok(null);
    } catch (e) {
      this.failure = err("rollout_write", `cannot write to rollout ${this.path}: ${errorMessage(e)}`, {
        path: this.path,
      });
      // Some runtimes (Deno) throw from inside their own write loop, after part of it went out.
      this.cutBack();
      return this.failure;
    }
  }

  /** Takes a partly written batch back off the file, so that it ends in a whole line. */
  private cutBack(): void {
    try {
      ftruncateSync(this.fh.fd, this.size);
    } catch {
      this.needsNewline = true;
    }
  }

  /** Appends the items that belong in history (see `shouldPersistItem`). */
  appendItems(items: readonly ResponseItem[]): Promise<Result<null>> {
    return this.append(items.filter(shouldPersistItem).map((payload) => ({ type: "response_item" as const, payload })));
  }

  /** Appends the events the persistence policy keeps; the others are dropped. */
  appendEvents(events: readonly EventMsg[], mode: EventPersistence = "limited"): Promise<Result<null>> {
    return this.append(
      events
        .filter((e) => shouldPersistEvent(e.type, mode))
        .map((payload) => ({ type: "event_msg" as const, payload })),
    );
  }

  /** Waits for every earlier append, then fsyncs. */
  flush(): Promise<Result<null>> {
    return this.enqueue(async () => {
      if (this.failure) return this.failure;
      try {
        await this.fh.sync();
        return ok(null);
      } catch (e) {
        return err("rollout_sync", `cannot sync rollout ${this.path}: ${errorMessage(e)}`, { path: this.path });
      }
    });
  }

  /** Waits for earlier appends, fsyncs and closes; appends made after this call fail with `rollout_closed`. */
  close(): Promise<Result<null>> {
    if (this.closed) return Promise.resolve(ok(null));
    this.closed = true;
    const p = this.tail.then(async (): Promise<Result<null>> => {
      try {
        await this.fh.sync();
        await this.fh.close();
        return ok(null);
      } catch (e) {
        await this.fh.close().catch(() => {});
        return err("rollout_close", `cannot sync and close rollout ${this.path}: ${errorMessage(e)}`, {
          path: this.path,
        });
      }
    });
    this.tail = p;
    return p;
  }

  private enqueue<T>(op: () => Promise<Result<T>>): Promise<Result<T>> {
    if (this.closed) return Promise.resolve(err("rollout_closed", `rollout ${this.path} is already closed`));
    this.busy++;
    const done = () => {
      this.busy--;
    };
    const p = this.tail.then(op, op).finally(done);
    this.tail = p;
    return p;
  }
}
