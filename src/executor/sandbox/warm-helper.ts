/**
 * One sandbox helper started ahead of the command that will use it, so a sandboxed command
 * does not wait for relay's start-up: the spare sits in a blocking read of its stdin; taking
 * it sends the plan, argv, env and cwd, and the helper confines itself and execs the command,
 * which keeps the spare's pid, pipes and process group. The next spare starts right after.
 * Pipe-mode commands only (a PTY is made per command); a burst that finds no spare starts a
 * helper as before.
 */
import type { ConfinePlan } from "./linux/plan-schema.ts";
import { SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG, SINGLE_THREAD_ENV } from "./linux/helper-arg.ts";
import { spawnPipes, type ControlledProcess } from "../spawn/pipes.ts";

export interface WarmLaunch {
  plan: ConfinePlan;
  command: string[];
}

export class WarmHelpers {
  private spare: ControlledProcess | undefined;
  private spareExited = false;
  private stopped = false;
  hits = 0;
  misses = 0;

  /**
   * @param self argv that starts relay
   * @param env the spare's own environment (PATH, the executor's marker); the command's comes in the request
   */
  constructor(
    private readonly self: string[],
    private readonly env: Record<string, string>,
  ) {}

  private start(): void {
    if (this.stopped) return;
    const r = spawnPipes({ argv: [...this.self, SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG], cwd: "/", env: { ...this.env, ...SINGLE_THREAD_ENV }, tty: false }, true);
    if ("error" in r) return;
    this.spare = r.ok;
    this.spareExited = false;
    const mine = r.ok;
    void mine.exited.then(() => {
      if (this.spare === mine) this.spareExited = true;
    });
  }

  /**
   * The next spare starts as soon as this one has its request, so it has booted (about 10 ms of
   * Bun start-up) by the time the next command comes, even in a burst of quick commands where
   * the model answers at once. Starting it blocks this event loop for about a millisecond, so it
   * waits for the next turn of the loop (the request just written goes out first); a command
   * that exits meanwhile is noticed at most that much later.
   */
  private startNext(): void {
    setImmediate(() => this.start());
  }

  /** Starts the first spare (call when sandboxed commands are expected). */
  warm(): void {
    if (!this.spare && !this.stopped) this.start();
  }

  /** Runs `launch` in the spare, or returns undefined when there is none ready. */
  take(launch: WarmLaunch, env: Record<string, string>, cwd: string): ControlledProcess | undefined {
    const spare = this.spare;
    this.spare = undefined;
    if (!spare || this.spareExited) {
      this.misses++;
      this.start();
      return undefined;
    }
    // One line: JSON.stringify escapes every newline inside the request.
    spare.sendAndClose(`${JSON.stringify({ plan: launch.plan, argv: launch.command, env, cwd })}\n`);
    this.hits++;
    this.startNext();
    return spare;
  }

  /** The spare's pid, so shutdown can kill it. */
  get sparePid(): number | undefined {
    return this.spare?.pid;
  }

  stop(): number | undefined {
    this.stopped = true;
    const pid = this.spare?.pid;
    this.spare = undefined;
    return pid;
  }
}
