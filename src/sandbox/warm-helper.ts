/**
 * One sandbox helper started ahead of the command that will use it, so a sandboxed command
 * does not wait for relay's start-up: the spare sits in a blocking read of its stdin; taking
 * it sends the plan, argv, env and cwd, and the helper confines itself and execs the command,
 * which keeps the spare's pid, pipes and process group. A new spare replaces it at once.
 * Pipe-mode commands only (a PTY is made per command); a burst that finds no spare starts a
 * helper as before.
 */

import { type ControlledProcess, spawnPipes } from "../process/spawn/index.ts";
import { SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG, SINGLE_THREAD_ENV } from "./linux/helper-arg.ts";
import type { ConfinePlan } from "./linux/plan-schema.ts";

/** Longest a command may keep the next spare from starting. */
const REFILL_DELAY_MS = 20;

export interface WarmLaunch {
  plan: ConfinePlan;
  command: string[];
}

/**
 * Spares kept ready. One is not enough for commands that follow each other at once (a model
 * calling tools in a row): the spare started after a command is still booting when the next
 * arrives, which then waits for the rest of relay's start-up. With two, the one taken has
 * had a whole round trip to boot. Each command still costs one helper start, as before.
 */
export const WARM_POOL_SIZE = 2;

interface Spare {
  proc: ControlledProcess;
  exited: boolean;
}

export class WarmHelpers {
  /** Oldest first: the first has been booting longest. */
  private spares: Spare[] = [];
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
    if (this.stopped || this.spares.length >= WARM_POOL_SIZE) return;
    const r = spawnPipes(
      {
        argv: [...this.self, SANDBOX_EXEC_ARG, SANDBOX_WAIT_FLAG],
        cwd: "/",
        env: { ...this.env, ...SINGLE_THREAD_ENV },
        tty: false,
      },
      true,
    );
    if ("error" in r) return;
    const spare: Spare = { proc: r.ok, exited: false };
    this.spares.push(spare);
    void r.ok.exited.then(() => {
      spare.exited = true;
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

  /** Starts the spares (call when sandboxed commands are expected), one after the other. */
  warm(): void {
    this.start();
    setTimeout(() => this.start(), 0);
  }

  /** Runs `launch` in the oldest live spare, or returns undefined when there is none. */
  take(launch: WarmLaunch, env: Record<string, string>, cwd: string): ControlledProcess | undefined {
    this.spares = this.spares.filter((s) => !s.exited);
    const spare = this.spares.shift();
    if (!spare) {
      this.misses++;
      this.start();
      return undefined;
    }
    // One line: JSON.stringify escapes every newline inside the request.
    spare.proc.sendAndClose(`${JSON.stringify({ plan: launch.plan, argv: launch.command, env, cwd })}\n`);
    this.hits++;
    this.startAfter(spare.proc);
    return spare.proc;
  }

  /** Stops making spares; returns the pids of those left, so shutdown can kill them. */
  stop(): number[] {
    this.stopped = true;
    const pids = this.spares.map((s) => s.proc.pid);
    this.spares = [];
    return pids;
  }
}
