/**
 * One sandbox helper started ahead of the command that will use it, so a sandboxed command
 * does not wait for relay's start-up: the spare sits in a blocking read of its stdin; taking
 * it sends the plan, argv, env and cwd, and the helper confines itself and execs the command,
 * which keeps the spare's pid, pipes and process group. The next spare starts at once.
 * Pipe-mode commands only (a PTY is made per command); a burst that finds no spare starts a
 * helper as before.
 */
import type { ConfinePlan } from "./linux/plan-schema.ts";
import { SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG, SINGLE_THREAD_ENV } from "./linux/helper-arg.ts";
import { spawnPipes, type ControlledProcess } from "../spawn/pipes.ts";

/** Longest a command may keep the next spare from starting. */
const REFILL_DELAY_MS = 20;

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
   * Starting a helper blocks this event loop for milliseconds, which would hold back both the
   * request just written and the notice of a quick command's exit: the next spare starts once
   * the command has exited (its result is out by then), or after REFILL_DELAY_MS.
   */
  private startAfter(taken: ControlledProcess): void {
    let started = false;
    const once = () => {
      if (started) return;
      started = true;
      clearTimeout(timer);
      setTimeout(() => this.start(), 0);
    };
    const timer = setTimeout(once, REFILL_DELAY_MS);
    void taken.exited.then(once);
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
    this.startAfter(spare);
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
