/**
 * How an executor launches sandboxed pipe-mode commands without a helper process of their own:
 * through its container's init (started on first use, again if it was killed), or else through a
 * warm sandbox helper started ahead of the command.
 */

import { MARKER_VAR } from "../process/kill-tree.ts";
import type { RunningProcess } from "../process/spawn/index.ts";
import { selfCommand } from "../protocol/child.ts";
import { Log } from "../util/log.ts";
import type { Result } from "../util/result.ts";
import { loadNative } from "./linux/confine-cc.ts";
import { type ContainerRef, containerAlive, reapContainer, startContainer } from "./linux/container.ts";
import type { ConfinePlan } from "./linux/plan-schema.ts";
import { ContainerSpawner, takes } from "./linux/spawner.ts";
import { simulated } from "./linux/support.ts";
import { WarmHelpers, type WarmLaunch } from "./warm-helper.ts";

const log = Log.create("executor");

/** Whether sandboxed commands run in the executor's container, and why not when they do not. */
export interface Containment {
  ref?: ContainerRef;
  /** The container's init, which spawns pipe-mode commands without a helper. */
  spawner?: ContainerSpawner;
  detail: string;
}

export class SandboxLaunchers {
  /** undefined: not started yet; null: not available. */
  private warm: WarmHelpers | null | undefined;
  private containment: Promise<Containment> | undefined;

  constructor(
    /** The marker value of a process about to start (ProcessManager.marker). */
    private readonly marker: (suffix: string) => string,
    private readonly useWarmHelpers: boolean,
  ) {}

  /** The warm sandbox helpers, started with the first sandboxed command; none where relay cannot re-exec. */
  warmHelpers(): WarmHelpers | undefined {
    if (this.warm === undefined) {
      const self = selfCommand();
      if ("error" in self || !this.useWarmHelpers) {
        this.warm = null;
        return undefined;
      }
      this.warm = new WarmHelpers(self.ok, {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        [MARKER_VAR]: this.marker("warm"),
      });
    }
    return this.warm ?? undefined;
  }

  /** The plan of the session's sandbox as `sandbox/check` last found it, for prewarmSandbox. */
  private checkedPlan: ConfinePlan | undefined;

  /** Notes the plan the session's sandboxed commands will use, without starting anything. */
  notePlan(plan: ConfinePlan): void {
    this.checkedPlan = plan;
  }

  /**
   * Readies what the first sandboxed command will use: the container, or spare helpers where
   * its init will not spawn under the plan `sandbox/check` noted. Without a noted plan, only a
   * container, and only `containerToo`.
   */
  prewarmSandbox(containerToo: boolean): void {
    const plan = this.checkedPlan;
    if (!plan && !containerToo) return;
    void this.container().then(async (c) => {
      if (plan && (!(await c.spawner?.ready) || !takes(plan))) this.warmHelpers()?.warm();
    });
  }

  /** Runs a pipe-mode command through the container's init; undefined where a helper must. */
  async spawnInContainer(
    launch: WarmLaunch,
    env: Record<string, string>,
    cwd: string,
  ): Promise<Result<RunningProcess, "spawn_failed"> | undefined> {
    const c = await this.containment;
    const target = launch.plan.container;
    if (!c?.spawner || !c.ref || !target || c.ref.pid !== target.pid || c.ref.start !== target.start) return undefined;
    return c.spawner.spawn(launch, env, cwd);
  }

  /**
   * The container sandboxed commands join, started on first use (Linux, built-in sandbox) and
   * again if its init was killed; without one, what that leaves (best effort) and why.
   */
  container(): Promise<Containment> {
    const current = this.containment;
    if (current) {
      return current.then(async (c) => {
        await this.reapDeadInits();
        // A dying init still has its namespaces in /proc for a moment, but its channel has ended.
        if (!c.ref || (containerAlive(c.ref) && !c.spawner?.ended)) return c;
        if (this.containment === current) {
          this.containment = undefined;
          this.deadInits.add(c.ref.pid);
        }
        return this.container();
      });
    }
    this.containment = this.startContainer();
    return this.containment;
  }

  /** Inits of containers that died (killed from outside), until their exit is collected. */
  private readonly deadInits = new Set<number>();

  private async reapDeadInits(): Promise<void> {
    for (const pid of [...this.deadInits]) if (await reapContainer(pid)) this.deadInits.delete(pid);
  }

  private async startContainer(): Promise<Containment> {
    const self = selfCommand();
    if ("error" in self) return { detail: self.error.message };
    const started = await startContainer(self.ok);
    if ("error" in started) {
      log.warn("no container: sandboxed commands are tracked by marker and process group", {
        reason: started.error.message,
      });
      return { detail: started.error.message };
    }
    log.info("container started", { pid: started.ok.ref.pid });
    this.containerPid = started.ok.ref.pid;
    const native = await loadNative();
    // startContainer compiled it already; without it there is no container to talk to either.
    const off = simulated().noInitSpawn ? "simulated by RELAY_SANDBOX_SIMULATE=no-init-spawn" : undefined;
    const spawner = "ok" in native ? new ContainerSpawner(native.ok, started.ok.channel, off) : undefined;
    return {
      ref: started.ok.ref,
      spawner,
      detail: "sandboxed commands run in the executor's pid namespace and end with it",
    };
  }

  /** The container's init, if one was started (synchronously, for exit handlers). */
  private containerPid: number | undefined;

  /** How often a sandboxed command found a warm helper (hits) or had to start one (misses). */
  warmStats(): { hits: number; misses: number } {
    return { hits: this.warm?.hits ?? 0, misses: this.warm?.misses ?? 0 };
  }

  /** Stops the warm helpers; the pids of the spares never taken (still reading their request, they started nothing). */
  stopWarmHelpers(): number[] {
    return this.warm?.stop() ?? [];
  }

  /** The container's init, if one was started (synchronously, for exit handlers). */
  get initPid(): number | undefined {
    return this.containerPid;
  }
}
