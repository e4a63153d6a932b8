/**
 * The moves a driven run records: a handoff (the next pending action in one write with the
 * in-flight record cleared, then the run log, progress and a checkpoint) and the run's end
 * (run.json's status, the run log, the roles' sessions closed, the result).
 */

import { Log } from "../../util/log.ts";
import { ok, type Result } from "../../util/result.ts";
import type { CheckpointTrigger } from "../checkpoint-format.ts";
import type { Pending, RunMeta, RunStore } from "../run-store.ts";
import type { RunCheckpoints } from "./checkpointing.ts";
import type { InftyOptions, InftyResult } from "./options.ts";
import type { RunPulse } from "./pulse.ts";
import type { RoleSessions } from "./role-sessions.ts";

const log = Log.create("infty");

/** One move of the state machine: the next pending action and how the handoff is reported. */
export interface Transition {
  pending: Pending;
  from: string;
  to: string;
  summary: string;
}

/** undefined: go on with the next pending action. */
export type Step = Result<InftyResult> | undefined;

export const rejected = (problem: string, summary: string): Transition => ({
  pending: { type: "solver_message", message: JSON.stringify({ type: "delivery_rejected", problem }) },
  from: "orchestrator",
  to: "solver",
  summary,
});

export class RunLedger {
  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
    private readonly pulse: RunPulse,
    private readonly checkpoints: RunCheckpoints,
    private readonly roles: RoleSessions,
  ) {}

  /** Saves the next pending action in one write that also clears the in-flight record; then the index and a checkpoint. */
  async handoff(
    t: Transition,
    patch: Partial<RunMeta> = {},
    trigger: CheckpointTrigger = "handoff",
  ): Promise<undefined> {
    await this.store.update({
      ...patch,
      pending: t.pending,
      inflight: null,
      handoffs: this.store.state.handoffs + 1,
      tokens_used: this.pulse.board.tokensUsed,
      activity: this.pulse.board.snapshot(),
    });
    await this.store.log({ type: "handoff", from: t.from, to: t.to, summary: t.summary });
    this.o.report({ type: "handoff", from: t.from, to: t.to, summary: t.summary });
    await this.checkpoints.checkpoint(trigger, `${t.from} → ${t.to}: ${t.summary}`);
    return undefined;
  }

  async finish(
    statusIn: InftyResult["status"],
    detailIn: string,
    extra: Partial<InftyResult> = {},
  ): Promise<Result<InftyResult>> {
    // A stop for a failed tool call can surface anywhere as a cancellation: report its cause.
    const stoppedByTool = this.roles.toolFailure !== undefined && statusIn !== "complete";
    const status = stoppedByTool ? "failed" : statusIn;
    const detail = stoppedByTool ? `${this.roles.toolFailure} (--fail-on-tool-error)` : detailIn;
    this.pulse.stop();
    const now = Date.now();
    try {
      await this.store.update({
        status,
        status_detail: detail,
        heartbeat_at: new Date(now).toISOString(),
        wall_ms_used: this.store.state.wall_ms_used + Math.max(0, now - this.pulse.lastBeat),
        tokens_used: this.pulse.board.tokensUsed,
        activity: this.pulse.board.snapshot(),
      });
      await this.store.log({
        type: "run_finished",
        status,
        detail,
        tokens_used: this.pulse.board.tokensUsed,
        roles: this.pulse.board.snapshot(),
      });
    } finally {
      await this.closeRoles();
    }
    log.info("run finished", { run_id: this.store.id, status, detail });
    this.o.report({
      type: "run_finished",
      run_id: this.store.id,
      status,
      detail,
      deliverable: extra.deliverable,
      summary: extra.summary,
    });
    return ok({ runId: this.store.id, dir: this.store.dir, status, detail, ...extra });
  }

  /** Stops the checkpoints' change feed, waits for a pack under way, and closes the roles' sessions. */
  async closeRoles(): Promise<void> {
    await this.checkpoints.close();
    await this.roles.close();
  }
}
