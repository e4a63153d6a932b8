/**
 * A driven run's pulse: the roles' activity and token count (the board), what the run did last,
 * and the heartbeat that writes them to run.json and the run log and reports them as progress.
 */

import { ActivityBoard } from "../activity.ts";
import { LeaseLostError, type RunStore } from "../run-store.ts";
import type { InftyOptions } from "./options.ts";

export class RunPulse {
  readonly board: ActivityBoard;
  private readonly started = Date.now();
  /** What the run did last, as the heartbeat reports it. */
  lastActivity = "starting sessions";
  /** When the heartbeat last added to run.json's wall-clock time. */
  lastBeat = Date.now();
  private beat: ReturnType<typeof setInterval> | undefined;
  /** A heartbeat's write is under way. */
  private beating = false;

  constructor(
    private readonly o: InftyOptions,
    private readonly store: RunStore,
    /** Stops the run after the current step: another process took it over. */
    private readonly stopper: AbortController,
  ) {
    this.board = new ActivityBoard(store.state.tokens_used);
  }

  start(): void {
    this.beat = setInterval(() => {
      const now = Date.now();
      const roles = this.board.snapshot();
      // A beat still writing (a loaded machine) is not joined by another: they would queue on the lease's lock.
      if (!this.beating) {
        this.beating = true;
        void this.store
          .heartbeat(now - this.lastBeat, { activity: roles, tokens_used: this.board.tokensUsed })
          .catch((e: NodeJS.ErrnoException) => {
            // Another process took the run over: stop after the current step, writing nothing more.
            // The run store became unwritable (a network filesystem gone): stop too, rather than
            // working on with nowhere to record it.
            if (e instanceof LeaseLostError || typeof e.code === "string") this.stopper.abort();
          })
          .finally(() => (this.beating = false));
        this.lastBeat = now;
      }
      const st = this.store.state;
      this.o.report({
        type: "heartbeat",
        turns: st.turns,
        max_turns: st.max_turns,
        elapsed_ms: now - this.started,
        last_activity: this.lastActivity,
        tokens_used: this.board.tokensUsed,
        max_tokens: st.max_tokens,
        roles,
      });
      void this.store
        .log({ type: "heartbeat", turns: st.turns, tokens_used: this.board.tokensUsed, roles })
        .catch(() => {});
    }, this.o.heartbeatMs ?? 15_000);
    this.beat.unref?.();
  }

  stop(): void {
    clearInterval(this.beat);
  }
}
