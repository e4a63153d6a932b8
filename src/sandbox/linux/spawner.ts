/**
 * The executor's side of its container's init (init-loop.ts): a sandboxed pipe-mode command is
 * one message to the init, which forks it confined, and one reply back, where a helper process
 * per command would cost a whole relay start-up. The executor makes the output pipe, keeps its
 * read end and sends the write end along; the init reports the command's pid on the host
 * (so killTree and the process list work as for any child) and, later, its wait status.
 * When the init cannot take a command (not ready, a request too big, a full channel) spawn
 * returns undefined and the caller uses a helper.
 */
import { closeSync } from "node:fs";
import {
  exitOfWaitStatus,
  outputFanout,
  type ProcessExit,
  pumpInto,
  type RunningProcess,
} from "../../process/spawn/index.ts";
import { Log } from "../../util/log.ts";
import { err, ok, type Result } from "../../util/result.ts";
import type { WarmLaunch } from "../warm-helper.ts";
import { makePair, type Native, spawnMode } from "./confine-cc.ts";
import { MAX_SPAWN_REQUEST } from "./plan-guard.ts";
import type { ConfinePlan } from "./plan-schema.ts";

/** Bun's reader of a descriptor (the executor runs on Bun wherever it has a container). */
const readFd = (fd: number): AsyncIterable<Uint8Array> =>
  (globalThis as unknown as { Bun: { file(fd: number): { stream(): AsyncIterable<Uint8Array> } } }).Bun.file(
    fd,
  ).stream();

type Reply = {
  id: number;
  pid?: number;
  exit?: number;
  problem?: string;
  status?: number;
  ready?: boolean;
  reason?: string;
};
type Spawned = { pid: number } | { exit: number } | { problem: string };

const log = Log.create("executor");

const KILLED: ProcessExit = { code: 128 + 9, signal: "SIGKILL" };
/** How soon releases the init's full channel refused are sent again. */
const RELEASE_RETRY_MS = 100;
/**
 * How long releases wait to go with the next command's request before they are sent on their
 * own: one message (and one wake-up of the init) fewer per command while a session runs
 * commands back to back. The zombies they free take nothing but their pids meanwhile.
 */
const RELEASE_DELAY_MS = 20;

export class ContainerSpawner {
  private nextId = 1;
  /** Spawn replies come in the order of the requests. */
  private readonly pending: Array<{ id: number; settle: (s: Spawned) => void }> = [];
  private readonly ends = new Map<number, (exit: ProcessExit) => void>();
  /** Commands the executor is done with, not yet told to the init (waiting for a request to go with, or its channel was full). */
  private toRelease: number[] = [];
  private releaseTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private markReady!: (ready: boolean) => void;
  /** Whether the init can spawn (it says so first); false once its channel has ended. */
  readonly ready = new Promise<boolean>((resolve) => (this.markReady = resolve));

  /** @param off why the init must not spawn here (RELAY_SANDBOX_SIMULATE=no-init-spawn): helpers do */
  constructor(
    private readonly native: Native,
    private readonly channel: number,
    private readonly off?: string,
  ) {
    void this.readReplies();
  }

  private async readReplies(): Promise<void> {
    let rest = "";
    try {
      for await (const chunk of readFd(this.channel)) {
        // One JSON line per message; a read may hold several of them or part of one.
        rest += Buffer.from(chunk).toString("utf8");
        let end: number;
        while ((end = rest.indexOf("\n")) !== -1) {
          this.handleLine(rest.slice(0, end));
          rest = rest.slice(end + 1);
        }
      }
    } catch {
      // the channel broke: as if it ended
    }
    this.close();
  }

  private handleLine(line: string): void {
    let reply: Reply;
    try {
      reply = JSON.parse(line) as Reply;
    } catch {
      return;
    }
    this.handle(reply);
  }

  private handle(reply: Reply): void {
    if (reply.ready !== undefined) {
      const why = this.off ?? reply.reason;
      if (!reply.ready || this.off)
        log.warn("the container's init does not spawn commands: helpers do", { reason: why });
      return this.markReady(reply.ready && !this.off);
    }
    if (reply.status !== undefined) {
      const end = this.ends.get(reply.id);
      this.ends.delete(reply.id);
      return end?.(exitOfWaitStatus(reply.status));
    }
    const at = reply.id === 0 ? 0 : this.pending.findIndex((p) => p.id === reply.id);
    const [waiter] = at < 0 ? [] : this.pending.splice(at, 1);
    if (reply.pid !== undefined) waiter?.settle({ pid: reply.pid });
    else if (reply.exit !== undefined) waiter?.settle({ exit: reply.exit });
    else waiter?.settle({ problem: reply.problem ?? "the container's init sent an unknown reply" });
  }

  /** Whether the init's channel has ended: the init is gone or going, whatever /proc still shows. */
  get ended(): boolean {
    return this.closed;
  }

  /** The init is gone: every process in its namespace went with it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.releaseTimer);
    this.markReady(false);
    for (const p of this.pending.splice(0))
      p.settle({
        problem:
          "the executor's container ended as it was started (was its init killed?); run the command again, which makes a new container",
      });
    for (const end of this.ends.values()) end(KILLED);
    this.ends.clear();
    closeQuietly(this.channel);
  }

  /**
   * Runs `launch` in the container, or undefined when the init cannot take it (use a helper).
   * The init waits for each child until its execve: with `vfork` where Landlock scopes signals
   * (ABI 6+), else with a `fork` and a deadline, since another command of the same user could
   * SIGSTOP the child there (confine-cc.ts spawnMode).
   */
  async spawn(
    launch: WarmLaunch,
    env: Record<string, string>,
    cwd: string,
  ): Promise<Result<RunningProcess, "spawn_failed"> | undefined> {
    if (!takes(launch.plan)) return undefined;
    if (!(await this.ready) || this.closed) return undefined;
    const id = this.nextId++;
    const release = this.toRelease;
    const request = Buffer.from(
      JSON.stringify({ id, plan: launch.plan, argv: launch.command, env, cwd, ...(release.length ? { release } : {}) }),
    );
    if (request.length > MAX_SPAWN_REQUEST) return undefined;
    const pipe = makePair(this.native, "pipe");
    if ("error" in pipe) return undefined;
    const [readEnd, writeEnd] = pipe.ok;
    const sent = Number(
      this.native.symbols.relay_send(this.channel, this.native.ffi.ptr(request), request.length, writeEnd, 0),
    );
    closeSync(writeEnd);
    if (sent !== request.length) {
      closeSync(readEnd);
      return undefined;
    }
    // The releases went with it (the init reaps them once it has started this command).
    if (release.length) {
      this.toRelease = [];
      clearTimeout(this.releaseTimer);
    }
    const exited = new Promise<ProcessExit>((resolve) => this.ends.set(id, resolve));
    const output = readOutput(readEnd);
    const spawned = await new Promise<Spawned>((settle) => this.pending.push({ id, settle }));
    if ("problem" in spawned) {
      this.ends.delete(id);
      // A refused request may have been refused whole: its releases are sent again (a second release of an id changes nothing).
      if (release.length) this.requeueReleases(release);
      return err("spawn_failed", `the sandboxed command could not be started: ${spawned.problem}`);
    }
    const done = "exit" in spawned ? Promise.resolve<ProcessExit>({ code: spawned.exit, signal: null }) : exited;
    if ("exit" in spawned) this.ends.delete(id);
    return ok({
      // A command that never ran has no pid: -1, which the kill paths leave alone.
      pid: "pid" in spawned ? spawned.pid : -1,
      tty: false,
      onData: output.onData,
      exited: done,
      outputClosed: output.closed,
      write: () =>
        err("stdin_closed", "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open"),
      ...("pid" in spawned ? { release: () => this.release(id) } : {}),
    });
  }

  /** Tells the init that command `id`'s pid may go (init-loop.ts keeps an ended command a zombie until then). */
  private release(id: number): void {
    this.toRelease.push(id);
    if (this.toRelease.length === 1) this.flushReleasesIn(RELEASE_DELAY_MS);
  }

  private requeueReleases(ids: number[]): void {
    this.toRelease = [...ids, ...this.toRelease];
    this.flushReleasesIn(RELEASE_DELAY_MS);
  }

  private flushReleasesIn(ms: number): void {
    clearTimeout(this.releaseTimer);
    (this.releaseTimer = setTimeout(() => this.flushReleases(), ms)).unref?.();
  }

  /** Sends the releases no request took on their own; a full channel keeps them for the next send. */
  private flushReleases(): void {
    if (this.closed || this.toRelease.length === 0) return;
    const message = Buffer.from(JSON.stringify({ release: this.toRelease }));
    const sent = Number(
      this.native.symbols.relay_send(this.channel, this.native.ffi.ptr(message), message.length, -1, 0),
    );
    if (sent === message.length) this.toRelease = [];
    // Tried again shortly, not only with the next command: a session may have run its last.
    else this.flushReleasesIn(RELEASE_RETRY_MS);
  }
}

/** Whether the init may spawn commands confined by `plan` (see spawn). */
export function takes(plan: ConfinePlan): boolean {
  return spawnMode(plan) !== undefined;
}

/** Reads the command's output pipe until every writer has closed it, then closes it. */
function readOutput(fd: number): { onData: RunningProcess["onData"]; closed: Promise<void> } {
  const output = outputFanout();
  const closed = pumpInto(readFd(fd), output.emit).then(() => closeQuietly(fd));
  return { onData: output.onData, closed };
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
